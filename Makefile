# s3cached - build, test and run.
#
#   make            build/s3cached, build/s3cachectl, build/s3cached-sim, build/s3cached-trainsim,
#                   build/plan-bench
#   make asan       build/asan/s3cached (AddressSanitizer + UBSan)
#   make tsan       build/tsan/s3cached (ThreadSanitizer)
#   make tsan-test  integration tests where threads meet most, gateway under ThreadSanitizer
#   make test       install what is missing, build, run unit and integration tests
#   make unit       cmocka unit tests only (under ASan/UBSan)
#   make tsan-unit  the unit tests that start threads, under ThreadSanitizer (part of test)
#   make valgrind   integration tests of the main request paths, gateway under valgrind memcheck
#   make docker-test   build the image (docker/Dockerfile) and test it as a sidecar on a real
#                   Docker engine, and the compose demo (part of test: tests/integration)
#   make pyunit     unit tests of the Python client (clients/python)
#   make fuzz       every libFuzzer target in tests/fuzz for FUZZ_SECONDS each (default 60)
#   make fuzz-smoke build the fuzz targets and run each over its seed corpus once (part of test)
#   make run        a local S3 server seeded with objects, and the gateway in front of it
#   make lint       clang-format check, a clang -Werror compile of every file, and the layers
#   make layers     each folder's library linked alone, and tools/check-layers.py
#   make format     clang-format every C file in place
#   make bench      every benchmark in bench/, results in bench/results/, plots in docs/img/

CC      ?= cc
PKGS    := libmicrohttpd libcurl jansson openssl zlib
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -llmdb -lpthread -lm
comma := ,
empty :=
space := $(empty) $(empty)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
TSANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
# The builds: build/ optimized, build/asan (ASan + UBSan, and assert()), build/tsan (TSan). Each
# has its objects, layer archives and status page under its root; FLAGS_<root> is what it adds.
ROOTS        := build build/asan build/tsan
FLAGS_build  :=
FLAGS_build/asan := $(SANFLAGS) -O1
FLAGS_build/tsan := $(TSANFLAGS) -O1

# ---- layers -------------------------------------------------------------------------------
# Each folder is a layer and a static library; it may use only the layers named in its USES_
# (docs/architecture.md). A unit test links its layer and those below, so a file that reaches up
# fails to link; `make layers` (part of lint) links every library alone and checks every include.
LAYERS        := common policy store proto sigv4 fleet upstream manifest gateway
USES_common   :=
USES_policy   := common
USES_store    := policy common
USES_proto    := common
USES_sigv4    := proto common
USES_fleet    := sigv4 proto common
USES_upstream := fleet sigv4 proto store policy common
USES_manifest := upstream fleet sigv4 proto store policy common
USES_gateway  := manifest upstream fleet sigv4 proto store policy common

SRC_common   := $(wildcard common/*.c)
SRC_policy   := $(wildcard policy/*.c)
SRC_store    := $(wildcard store/*.c)
SRC_proto    := $(wildcard proto/*.c)
SRC_sigv4    := $(wildcard sigv4/*.c)
SRC_fleet    := $(wildcard fleet/*.c)
SRC_upstream := $(wildcard upstream/*.c)
SRC_manifest := $(wildcard manifest/*.c)
SRC_gateway  := $(filter-out gateway/main.c,$(wildcard gateway/*.c gateway/admin/*.c))
LIB_SRC      := $(foreach l,$(LAYERS),$(SRC_$(l)))
HEADERS      := $(wildcard */*.h */*/*.h)

# The libraries a program or test of layer $(1) links, top first: $(2) is the build root.
layer_libs = $(2)/lib/lib$(1).a $(foreach u,$(USES_$(1)),$(2)/lib/lib$(u).a)

UNIT_SRC    := $(wildcard tests/unit/test_*.c)
SIM_SRC     := $(wildcard tools/sim/*.c)
CTL_SRC     := $(wildcard tools/ctl/*.c)
TRAINSIM_SRC := $(wildcard tools/trainsim/*.c)
EMBED_SRC   := tools/embed/embed.c
RELAY_SRC   := $(wildcard tools/latency-relay/*.c)
FLOOR_SRC   := $(wildcard tools/http-floor/*.c)
PLANBENCH_SRC := $(wildcard tools/planbench/*.c)
MEMFILL_SRC   := $(wildcard tools/memfill/*.c)
CHECKSUM_SRC  := $(wildcard tools/checksum/*.c)

FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)

FORMAT_SRC := $(wildcard */*.c */*.h gateway/admin/*.c gateway/admin/*.h tests/unit/*.c \
                tests/fuzz/*.c tests/fuzz/*.h tools/*/*.c tools/*/*.h)

# The status page: gateway/admin/status_page.html compiled in as build/gen/status_page.c, and
# into each build's gateway archive from there.
page_obj = $(1)/obj/gen/status_page.o

UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/asan/tests/%)
# The unit tests whose code starts threads, run again under ThreadSanitizer (make tsan-unit).
TSAN_UNIT := test_verify test_store test_store_blocks test_store_readers test_manifest \
             test_future test_authz_cache test_bucket_stats test_fill_meta
TSAN_UNIT_BIN := $(TSAN_UNIT:%=build/tsan/tests/%)

.PHONY: all asan tsan tsan-test tsan-unit unit pyunit test integration run format lint clean deps valgrind \
        bench fuzz fuzz-build fuzz-smoke docker-test layers
all: build/s3cached build/s3cachectl build/s3cached-sim build/s3cached-trainsim build/plan-bench \
     build/s3cached-memfill build/s3cached-checksum

# One archive per layer and build: $(1) the layer, $(2) the build's root.
define layer_lib
$(2)/lib/lib$(1).a: $$(SRC_$(1):%.c=$(2)/obj/%.o) $$(if $$(filter gateway,$(1)),$$(call page_obj,$(2)))
	@mkdir -p $$(dir $$@); rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach r,$(ROOTS),$(foreach l,$(LAYERS),$(eval $(call layer_lib,$(l),$(r)))))

# Each build's objects, its status page and its gateway: $(1) the build's root. The sanitized
# builds also check the invariants written as assert() (the optimized one defines NDEBUG only if
# the caller asks).
define flavour
$(1)/obj/%.o: %.c $$(HEADERS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(FLAGS_$(1)) -c -o $$@ $$<
$$(call page_obj,$(1)): build/gen/status_page.c gateway/admin/status_page.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(FLAGS_$(1)) -c -o $$@ $$<
$(1)/s3cached: $(1)/obj/gateway/main.o $$(call layer_libs,gateway,$(1))
	$$(CC) $$(CFLAGS) $$(FLAGS_$(1)) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach r,$(ROOTS),$(eval $(call flavour,$(r))))

# The trace simulator runs the real policy code, nothing of the gateway.
build/s3cached-sim: $(SIM_SRC:%.c=build/obj/%.o) $(call layer_libs,policy,build)
	$(CC) $(CFLAGS) -o $@ $^ -lm -lpthread

# The DataLoader emulator signs with the gateway's SigV4 code, nothing else of it.
build/s3cached-trainsim: $(TRAINSIM_SRC:%.c=build/obj/%.o) $(call layer_libs,sigv4,build)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/s3cachectl: $(CTL_SRC:%.c=build/obj/%.o) $(call layer_libs,common,build)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# A large manifest parsed and registered, timed and its memory counted (bench/plans.sh).
build/plan-bench: $(PLANBENCH_SRC:%.c=build/obj/%.o) $(call layer_libs,manifest,build)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The memory a cached object costs beyond LMDB's map (bench/memory.sh).
build/s3cached-memfill: $(MEMFILL_SRC:%.c=build/obj/%.o) $(call layer_libs,store,build)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The CRC-64/NVME S3 would send for a file, for the emulated cloud (bench/lib/cloud.sh).
build/s3cached-checksum: $(CHECKSUM_SRC:%.c=build/obj/%.o) $(call layer_libs,common,build)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# A small C program, not xxd (often missing): it also checks the page loads nothing
# from elsewhere and hashes its inline script and style for the Content-Security-Policy.
build/tools/embed: $(EMBED_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)

build/gen/status_page.c: gateway/admin/status_page.html build/tools/embed
	@mkdir -p $(dir $@)
	build/tools/embed $< gw_status_page ../../gateway/admin/status_page.h > $@.tmp && mv $@.tmp $@

asan: build/asan/s3cached build/asan/s3cachectl

build/asan/s3cachectl: $(CTL_SRC:%.c=build/asan/obj/%.o) $(call layer_libs,common,build/asan)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LDLIBS)

# The gateway under ThreadSanitizer: every access its threads make to shared memory is checked
# against the locks and atomics they hold (make tsan-test).
tsan: build/tsan/s3cached

# The benchmark's latency relay: epoll, no library but libc.
build/latency-relay: $(RELAY_SRC:%.c=build/obj/%.o) build/obj/common/sc_err.o \
                     build/obj/common/clock.o
	$(CC) $(CFLAGS) -o $@ $^ -lm

# The least a server can spend on a hit here (bench/floor.sh): epoll and libc, nothing else.
build/http-floor: $(FLOOR_SRC:%.c=build/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^

# ---- unit tests -----------------------------------------------------------------------------
# A test's layer is the highest layer it includes (from itself or a header beside it); it
# links that layer's library and the ones below, nothing above. Tools' tests also link the
# tool's pieces (everything in the tool but its main).
test_includes = $(shell cd tests/unit && sed -n 's|^\#include "\.\./\.\./\([a-z0-9_]*\)/.*|\1|p' \
                  $(notdir $(1)) $$(sed -n 's|^\#include "\([a-z0-9_]*\.h\)"|\1|p' $(notdir $(1))))
test_layer = $(lastword $(filter $(call test_includes,$(1)),$(LAYERS)))

RELAY_LIB_SRC    := $(filter-out tools/latency-relay/main.c,$(RELAY_SRC))
SIM_LIB_SRC      := $(filter-out tools/sim/main.c,$(SIM_SRC))
CTL_LIB_SRC      := $(filter-out tools/ctl/main.c,$(CTL_SRC))
TRAINSIM_LIB_SRC := $(filter-out tools/trainsim/main.c,$(TRAINSIM_SRC))
tool_objs = $(patsubst %.c,$(2)/obj/%.o,$(if $(filter test_latency_relay,$(1)),\
              $(RELAY_LIB_SRC)) $(if $(filter test_sim,$(1)),$(SIM_LIB_SRC)) \
              $(if $(filter test_ctl_%,$(1)),$(CTL_LIB_SRC)) \
              $(if $(filter test_trainsim_%,$(1)),$(TRAINSIM_LIB_SRC)))
# The layer a tool's pieces stand on (see the programs above).
tool_layer = $(if $(filter test_sim,$(1)),policy,$(if $(filter test_trainsim_%,$(1)),sigv4))
# test_s3_auth and test_fleet_auth wrap CRYPTO_memcmp, to see that signatures are compared in
# constant time.
LDEXTRA_test_s3_auth := -Wl,--wrap=CRYPTO_memcmp
LDEXTRA_test_fleet_auth := -Wl,--wrap=CRYPTO_memcmp
# test_httpdate wraps timegm, to see that a parse takes no time zone lock.
LDEXTRA_test_httpdate := -Wl,--wrap=timegm
# test_relay wraps up_req_resume, to see which transfer a relay resumes, and when.
LDEXTRA_test_relay := -Wl,--wrap=up_req_resume

# A unit test in a sanitized build: $(1) the test, $(2) the build's root.
define unit_test
$(2)/tests/$(1): tests/unit/$(1).c $$(call tool_objs,$(1),$(2)) \
                       $$(call layer_libs,$$(or $$(call test_layer,tests/unit/$(1).c),$$(call tool_layer,$(1)),common),$(2))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(FLAGS_$(2)) -o $$@ $$^ $$(LDLIBS) -lcmocka $$(LDEXTRA_$(1))
endef
$(foreach t,$(UNIT_SRC:tests/unit/%.c=%),$(eval $(call unit_test,$(t),build/asan)))
$(foreach t,$(TSAN_UNIT),$(eval $(call unit_test,$(t),build/tsan)))

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The unit tests that start threads, under ThreadSanitizer (setarch -R: see tsan-test).
tsan-unit: $(TSAN_UNIT_BIN)
	@set -e; for t in $(TSAN_UNIT_BIN); do echo "== $$t"; setarch $$(uname -m) -R $$t; done

# Each library linked alone with the ones below it: a symbol it takes from a layer above (or a
# sibling it may not use) is an undefined reference here. Then tools/check-layers.py: includes.
define layer_check
build/layers/$(1): $$(call layer_libs,$(1),build)
	@mkdir -p $$(dir $$@)
	@printf 'int main(void) { return 0; }\n' > $$@.c
	$$(CC) $$(CFLAGS) -o $$@ $$@.c -Wl,--whole-archive build/lib/lib$(1).a -Wl,--no-whole-archive \
	    $$(foreach u,$$(USES_$(1)),build/lib/lib$$(u).a) $$(LDLIBS)
endef
$(foreach l,$(LAYERS),$(eval $(call layer_check,$(l))))

layers: $(LAYERS:%=build/layers/%)
	@python3 tools/test_check_layers.py -q
	@python3 tools/check-layers.py $(foreach l,$(LAYERS),$(l)=$(subst $(space),$(comma),$(strip $(USES_$(l)))))

pyunit:
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m unittest discover -s clients/python/tests

# ---- fuzzing (docs/security.md#fuzzing) ----
# libFuzzer needs clang, and the code under test is instrumented for coverage too, so the
# library is built again with clang into build/fuzz/obj (the main build uses gcc) and put in an
# archive: each target links only the objects it uses.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_BIN     := $(FUZZ_TARGETS:%=build/fuzz/%)
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Wshadow \
                -Wno-unused-parameter $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
                -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer
FUZZ_RUN     := -rss_limit_mb=2048 -timeout=10 -max_len=20000 -print_final_stats=1

build/fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/libs3cached.a: $(LIB_SRC:%.c=build/fuzz/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h build/fuzz/libs3cached.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libs3cached.a $(LDLIBS)

fuzz-build: $(FUZZ_BIN)

# Each target over its seed corpus once (regressions included): quick, deterministic.
fuzz-smoke: fuzz-build
	@mkdir -p build/fuzz/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	    build/fuzz/$$t -runs=0 $(FUZZ_RUN) -artifact_prefix=build/fuzz/artifacts/$$t- \
	        tests/fuzz/corpus/$$t 2>build/fuzz/$$t.smoke.log || \
	        { tail -n 40 build/fuzz/$$t.smoke.log; echo "fuzz-smoke: $$t FAILED"; exit 1; }; \
	    echo "fuzz-smoke: $$t: $$(ls tests/fuzz/corpus/$$t | wc -l) seeds pass"; done

# Every target for FUZZ_SECONDS, one after the other. New inputs go to a temporary copy of the
# corpus (the repository is never written); a crash is saved as build/fuzz/artifacts/<target>-*.
# FUZZ_TARGETS=fuzz_range narrows the run.
fuzz: fuzz-build
	@mkdir -p build/fuzz/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	    tmp=$$(mktemp -d /tmp/s3cached-fuzz.XXXXXX); cp -R tests/fuzz/corpus/$$t/. $$tmp/; \
	    echo "== $$t for $(FUZZ_SECONDS) s"; \
	    build/fuzz/$$t $$tmp -max_total_time=$(FUZZ_SECONDS) $(FUZZ_RUN) \
	        -artifact_prefix=build/fuzz/artifacts/$$t- >build/fuzz/$$t.log 2>&1 || \
	        { tail -n 60 build/fuzz/$$t.log; rm -rf $$tmp; echo "fuzz: $$t FAILED"; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|new_units_added)' build/fuzz/$$t.log || true; \
	    rm -rf $$tmp; done

deps:
	tools/install-deps.sh

integration: all asan
	tests/integration/run.sh

# The optimized build under valgrind memcheck, over the tests of the everyday request paths
# (against s3rver; timing-sensitive fault tests stay with the ASan run).
VALGRIND_TESTS := test_downloads.py test_ranges.py test_conditional.py test_headers.py \
                  test_uploads.py test_invalidation.py test_manifests.py test_freshness.py \
                  test_metrics.py test_probes.py
valgrind: all
	S3CACHED_IT_VALGRIND=1 tests/integration/run.sh -k "not radosgw" $(VALGRIND_TESTS)

# The gateway under ThreadSanitizer, over the tests where its threads meet most and whose
# assertions do not count bytes or time: manifests and their fleet, writes racing fills and
# peers, concurrent readers, the scrubber (against s3rver: about 3 minutes). Tests that bound
# upstream bytes by how fast a stream is stopped (test_large_objects.py) can miss their bound
# at TSan's speed: they run under ASan. The whole suite passes under TSan otherwise (about 35
# minutes: S3CACHED_BIN=build/tsan/s3cached tests/integration/run.sh).
# Without address-space randomization (setarch -R): TSan's shadow memory wants fixed ranges,
# which a kernel with more mmap entropy than Debian's default would break.
TSAN_TESTS := test_fleet_coherence.py test_fleet_manifests.py test_manifests.py \
              test_write_coherence.py test_concurrency.py test_scrub.py
tsan-test: all tsan
	setarch $$(uname -m) -R env S3CACHED_BIN=build/tsan/s3cached \
	    tests/integration/run.sh -k "not radosgw" $(TSAN_TESTS)

# The image on a real engine: tools/dockerd.sh starts Debian's dockerd if none answers and makes
# the base images with mmdebstrap once. `make test` runs these tests with the rest of
# tests/integration; under CI=true an engine that cannot start fails them.
docker-test: all asan
	tools/dockerd.sh
	tests/integration/run.sh test_docker_sidecar.py

test: deps
	$(MAKE) lint
	$(MAKE) all asan tsan
	$(MAKE) unit
	$(MAKE) tsan-unit
	$(MAKE) pyunit
	$(MAKE) fuzz-smoke
	tests/integration/run.sh
	$(MAKE) valgrind
	$(MAKE) tsan-test

# gcc builds everything above; clang must accept every file too, with the same warnings.
lint:
	@clang-format --dry-run --Werror $(FORMAT_SRC)
	@for f in $(LIB_SRC) gateway/main.c $(UNIT_SRC) $(SIM_SRC) $(CTL_SRC) $(TRAINSIM_SRC) \
	         $(EMBED_SRC) $(RELAY_SRC) $(FLOOR_SRC) $(PLANBENCH_SRC) $(MEMFILL_SRC) $(CHECKSUM_SRC) $(FUZZ_SRC); do \
	    clang $(filter-out -O2 -g,$(CFLAGS)) -fsyntax-only $$f || exit 1; done
	@echo "lint: clang-format and clang -Werror clean"
	@$(MAKE) -s layers

# Every benchmark, one after the other (bench/all.sh; about 10 minutes on 2 cores, budget 15). Needs root
# for the emulated cloud's network namespace; installs gnuplot for the plots.
bench:
	tools/install-deps.sh --bench
	$(MAKE) all build/latency-relay build/http-floor
	bench/all.sh

run: deps all
	tools/run-local.sh

format:
	clang-format -i $(FORMAT_SRC)

clean:
	rm -rf build
