/* test_gate.c - upstream admission: N slots per destination, waiters admitted oldest first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../upstream/gate.h"

static void admits_up_to_the_limit_then_in_arrival_order(void **state)
{
    struct gates gs;
    gates_init(&gs, 2);
    struct gate_entry e[5];
    memset(e, 0, sizeof(e));
    for (int i = 0; i < 5; i++)
        assert_int_equal(gates_wait(&gs, &e[i], "", false), SC_OK);
    assert_int_equal(gates_waiting(&gs), 5);
    assert_ptr_equal(gates_admit(&gs), &e[0]);
    assert_ptr_equal(gates_admit(&gs), &e[1]);
    assert_null(gates_admit(&gs)); /* both slots held */
    assert_int_equal(gates_waiting(&gs), 3);
    gates_leave(&gs, &e[1]);
    assert_ptr_equal(gates_admit(&gs), &e[2]);
    gates_leave(&gs, &e[0]);
    gates_leave(&gs, &e[2]);
    assert_ptr_equal(gates_admit(&gs), &e[3]);
    assert_ptr_equal(gates_admit(&gs), &e[4]);
    assert_null(gates_admit(&gs));
    gates_leave(&gs, &e[3]);
    gates_leave(&gs, &e[4]);
    assert_int_equal(gates_waiting(&gs), 0);
    gates_destroy(&gs);
}

static void a_newcomer_never_takes_a_slot_ahead_of_a_waiter(void **state)
{
    struct gates gs;
    gates_init(&gs, 1);
    struct gate_entry held = {0}, old = {0}, young = {0};
    gates_wait(&gs, &held, "", false);
    assert_ptr_equal(gates_admit(&gs), &held);
    gates_wait(&gs, &old, "", false);
    gates_leave(&gs, &held);            /* the slot frees... */
    gates_wait(&gs, &young, "", false); /* ...and a newcomer arrives before the next admission */
    assert_ptr_equal(gates_admit(&gs), &old);
    gates_leave(&gs, &old);
    assert_ptr_equal(gates_admit(&gs), &young);
    gates_leave(&gs, &young);
    gates_destroy(&gs);
}

static void a_continuing_attempt_goes_to_the_front(void **state)
{
    struct gates gs;
    gates_init(&gs, 1);
    struct gate_entry held = {0}, waiter = {0}, resume = {0};
    gates_wait(&gs, &held, "", false);
    assert_ptr_equal(gates_admit(&gs), &held);
    gates_wait(&gs, &waiter, "", false);
    gates_wait(&gs, &resume, "", true);
    gates_leave(&gs, &held);
    assert_ptr_equal(gates_admit(&gs), &resume);
    gates_leave(&gs, &resume);
    assert_ptr_equal(gates_admit(&gs), &waiter);
    gates_leave(&gs, &waiter);
    gates_destroy(&gs);
}

static void destinations_have_their_own_slots(void **state)
{
    struct gates gs;
    gates_init(&gs, 1);
    struct gate_entry bucket[2] = {{0}}, peer = {0};
    gates_wait(&gs, &bucket[0], "", false);
    gates_wait(&gs, &bucket[1], "", false);
    gates_wait(&gs, &peer, "http://10.0.0.2:8080", false);
    struct gate_entry *a = gates_admit(&gs), *b = gates_admit(&gs);
    assert_true((a == &bucket[0] && b == &peer) || (a == &peer && b == &bucket[0]));
    assert_null(gates_admit(&gs)); /* bucket[1] waits for the bucket's one slot */
    gates_leave(&gs, &peer);
    assert_null(gates_admit(&gs));
    gates_leave(&gs, &bucket[0]);
    assert_ptr_equal(gates_admit(&gs), &bucket[1]);
    gates_leave(&gs, &bucket[1]);
    gates_destroy(&gs);
}

static void leaving_the_line_and_leaving_twice(void **state)
{
    struct gates gs;
    gates_init(&gs, 1);
    struct gate_entry held = {0}, a = {0}, b = {0}, c = {0};
    gates_wait(&gs, &held, "", false);
    assert_ptr_equal(gates_admit(&gs), &held);
    gates_wait(&gs, &a, "", false);
    gates_wait(&gs, &b, "", false);
    gates_wait(&gs, &c, "", false);
    gates_leave(&gs, &b); /* canceled while waiting: out of the middle of the line */
    gates_leave(&gs, &b); /* outside: nothing */
    assert_null(b.gate);
    assert_int_equal(gates_waiting(&gs), 2);
    gates_leave(&gs, &held);
    assert_ptr_equal(gates_admit(&gs), &a);
    gates_leave(&gs, &a);
    assert_ptr_equal(gates_admit(&gs), &c);
    gates_leave(&gs, &c);
    gates_leave(&gs, &c); /* a slot is given back once only */
    assert_int_equal(gates_waiting(&gs), 0);
    gates_wait(&gs, &a, "", false);
    assert_ptr_equal(gates_admit(&gs), &a); /* the one slot is free again */
    gates_leave(&gs, &a);
    gates_destroy(&gs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admits_up_to_the_limit_then_in_arrival_order),
        cmocka_unit_test(a_newcomer_never_takes_a_slot_ahead_of_a_waiter),
        cmocka_unit_test(a_continuing_attempt_goes_to_the_front),
        cmocka_unit_test(destinations_have_their_own_slots),
        cmocka_unit_test(leaving_the_line_and_leaving_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
