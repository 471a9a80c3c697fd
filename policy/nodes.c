/* nodes.c - the policies' node pool and index-linked lists (see nodes.h). */
#include "nodes.h"

#include <stdlib.h>

#define MIN_NODES 32u
#define MAX_NODES (UINT32_MAX - 1u)

static struct node *link_at(const struct node_pool *p, uint32_t n)
{
    return node_at(p, n);
}

sc_code node_pool_init(struct node_pool *p, size_t elem)
{
    *p = (struct node_pool){.elem = elem, .free_head = NODE_NIL};
    p->mem = malloc(MIN_NODES * elem);
    if (p->mem == NULL)
        return SC_ENOMEM;
    p->cap = MIN_NODES;
    return SC_OK;
}

void node_pool_free(struct node_pool *p)
{
    free(p->mem);
    p->mem = NULL;
    p->cap = 0;
    p->used = 0;
}

uint32_t node_alloc(struct node_pool *p)
{
    if (p->free_head != NODE_NIL) {
        uint32_t n = p->free_head;
        p->free_head = link_at(p, n)->next;
        return n;
    }
    if (p->used == p->cap) {
        if (p->cap > MAX_NODES / 2)
            return NODE_NIL;
        uint32_t cap = p->cap * 2;
        unsigned char *mem = realloc(p->mem, (size_t)cap * p->elem);
        if (mem == NULL)
            return NODE_NIL;
        p->mem = mem;
        p->cap = cap;
    }
    return p->used++;
}

void node_release(struct node_pool *p, uint32_t n)
{
    link_at(p, n)->next = p->free_head;
    p->free_head = n;
}

uint64_t node_key(const void *pool, uint32_t n)
{
    return link_at(pool, n)->key;
}

void node_list_init(struct node_list *l)
{
    *l = (struct node_list){.head = NODE_NIL, .tail = NODE_NIL};
}

void node_push_head(struct node_pool *p, struct node_list *l, uint32_t n)
{
    struct node *node = link_at(p, n);
    node->prev = NODE_NIL;
    node->next = l->head;
    if (l->head != NODE_NIL)
        link_at(p, l->head)->prev = n;
    l->head = n;
    if (l->tail == NODE_NIL)
        l->tail = n;
    l->count++;
}

void node_unlink(struct node_pool *p, struct node_list *l, uint32_t n)
{
    struct node *node = link_at(p, n);
    if (node->prev != NODE_NIL)
        link_at(p, node->prev)->next = node->next;
    else
        l->head = node->next;
    if (node->next != NODE_NIL)
        link_at(p, node->next)->prev = node->prev;
    else
        l->tail = node->prev;
    l->count--;
}

sc_code node_set_init(struct node_set *s, size_t elem)
{
    sc_code rc = node_pool_init(&s->pool, elem);
    if (rc == SC_OK)
        rc = idmap_init(&s->map, node_key, &s->pool);
    if (rc != SC_OK)
        node_pool_free(&s->pool);
    return rc;
}

void node_set_free(struct node_set *s)
{
    idmap_free(&s->map);
    node_pool_free(&s->pool);
}

uint32_t node_set_find(const struct node_set *s, uint64_t key)
{
    return idmap_get(&s->map, key);
}

uint32_t node_set_add(struct node_set *s, uint64_t key)
{
    uint32_t n = node_alloc(&s->pool);
    if (n == NODE_NIL)
        return NODE_NIL;
    link_at(&s->pool, n)->key = key;
    if (idmap_put(&s->map, n) != SC_OK) {
        node_release(&s->pool, n);
        return NODE_NIL;
    }
    return n;
}

void node_set_drop(struct node_set *s, uint32_t n)
{
    idmap_del(&s->map, link_at(&s->pool, n)->key);
    node_release(&s->pool, n);
}

void node_set_remove(struct node_set *s, struct node_list *l, uint32_t n)
{
    node_unlink(&s->pool, l, n);
    node_set_drop(s, n);
}

bool node_list_end_key(const struct node_pool *p, const struct node_list *l, bool oldest,
                       uint64_t *key)
{
    uint32_t n = oldest ? l->tail : l->head;
    if (n == NODE_NIL)
        return false;
    *key = link_at(p, n)->key;
    return true;
}
