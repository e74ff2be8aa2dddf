# hookd - webhook and postback delivery appliance.
# GNU make. `make run` installs the missing build packages (apt) first,
# `make test` the test packages too.

PKG_CONFIG ?= pkg-config
CC         ?= cc
BUILD      ?= build
PYTHON     ?= /usr/bin/python3
VERSION    := $(shell cat VERSION)

PKGS       := sqlite3 libcurl libcjson inih ncursesw
# WITH_PG=0 builds without the PostgreSQL backend (no libpq).
WITH_PG    ?= 1
ifeq ($(WITH_PG),1)
PKGS       += libpq
CPPFLAGS   += -DHOOKD_WITH_PG=1
endif
OPT        ?= -O2 -g
WARN       := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-unused-parameter
SAN        ?=
CPPFLAGS   += -Iinclude -I$(BUILD)/gen -D_GNU_SOURCE -DINI_HANDLER_LINENO=1 \
              -DHOOKD_VERSION='"$(VERSION)"'
CFLAGS     += -std=c11 $(OPT) $(WARN) $(SAN) -pthread \
              $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDFLAGS    += $(SAN) -pthread
LDLIBS     += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) \
              -lmbedtls -lmbedx509 -lmbedcrypto -lm

# Pure logic first (no I/O; unit tests drive it), then the daemon.
LIB_SRCS := \
	src/backoff.c \
	src/breaker.c \
	src/outcome.c \
	src/percentile.c \
	src/retry_after.c \
	src/sign.c \
	src/seal.c \
	src/netpolicy.c \
	src/proxy.c \
	src/jpath.c \
	src/tpl.c \
	src/tplfn.c \
	src/filter.c \
	src/schedule.c \
	src/urlmask.c \
	src/tbucket.c \
	src/clockstep.c \
	src/limiter.c \
	src/slotq.c \
	src/tlsid.c \
	src/xfer.c \
	src/esc.c \
	src/netshare.c \
	src/util.c \
	src/jscan.c \
	src/log.c \
	src/settings.c \
	src/epdef.c \
	src/config.c \
	src/proto.c \
	src/req.c \
	src/endpoint.c \
	src/postback.c \
	src/opsev.c \
	src/counters.c \
	src/epstats.c \
	src/metrics.c \
	src/cron.c \
	src/store.c \
	src/db.c \
	src/store_sqlite_sql.c \
	src/store_sqlite.c \
	src/store_sqlite_queue.c \
	src/store_sqlite_endpoint.c \
	src/store_sqlite_read.c \
	$(if $(filter 1,$(WITH_PG)),src/store_pg_sql.c src/store_pg_conn.c src/store_pg.c src/store_pg_queue.c \
	  src/store_pg_admin.c src/store_pg_endpoint.c src/store_pg_read.c src/store_pg_node.c src/store_pg_watch.c) \
	src/store_open.c \
	src/msgsel.c \
	src/store_seal.c \
	src/registry.c \
	src/cluster.c \
	src/notify.c \
	src/settle.c \
	src/dispatch.c \
	src/intake.c \
	src/admin.c \
	src/maint.c \
	src/writer.c \
	src/query.c \
	src/query_report.c \
	src/reader.c \
	src/deliver.c \
	src/climit.c \
	src/ctlsock.c \
	src/cpeer.c \
	src/conns.c \
	src/server.c \
	src/client.c \
	src/cli_args.c \
	src/cli_show.c \
	src/cli_msgs.c \
	src/report.c \
	src/topview.c \
	src/top.c \
	src/backup.c \
	src/export_fmt.c \
	src/export.c \
	src/cli.c
MAIN_SRC := src/main.c
SRCS     := $(LIB_SRCS) $(MAIN_SRC)

LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
MAIN_OBJ := $(BUILD)/obj/main.o
HOOKD    := $(BUILD)/hookd
SCHEMA   := $(sort $(wildcard schema/*.sql))
SCHEMA_PG := $(sort $(wildcard schema/postgres/*.sql))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

# Build and test packages; `deps` installs only what is missing.
DEB_BUILD_DEPS := gcc make libc6-dev pkg-config libsqlite3-dev libcurl4-openssl-dev \
                  libmbedtls-dev libcjson-dev libinih-dev libncurses-dev libpq-dev
DEB_TEST_DEPS  := groff-base mandoc postgresql python3-psycopg2 libcmocka-dev python3 python3-pytest openssl nginx-light wrk prometheus php-cli nodejs chromium python3-pytest-xdist
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all deps deps-build deps-test run test unit integration integration-pg integration-pg-all mutants asan tsan clean bench check-deps
.DEFAULT_GOAL := all

all: $(HOOKD)

# deps-build: what `make run` and `make all` need; deps-test (= deps): the
# test packages as well, for `make test`.
define apt_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps-build:
	$(call apt_missing,$(DEB_BUILD_DEPS))

deps deps-test:
	$(call apt_missing,$(DEB_BUILD_DEPS) $(DEB_TEST_DEPS))

# The schema files as C strings: $(1) the array's name, $(2) the files.
define gen_schema
	@mkdir -p $(@D)
	@{ echo "/* generated from the schema directory by make: do not edit */"; \
	   n=0; for f in $(2); do n=$$((n+1)); \
	     echo "static const char $(1)_$$n[] ="; \
	     sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $$f; \
	     echo "    ;"; done; \
	   echo "static const char *const $(1)[] = {"; \
	   i=0; while [ $$i -lt $$n ]; do i=$$((i+1)); echo "    $(1)_$$i,"; done; \
	   echo "};"; } > $@.tmp && mv $@.tmp $@
endef

$(BUILD)/gen/schema_sql.h: $(SCHEMA) Makefile
	$(call gen_schema,schema_sql,$(SCHEMA))
	@echo "#define SCHEMA_VERSION $(words $(SCHEMA))" >> $@

$(BUILD)/gen/schema_pg_sql.h: $(SCHEMA_PG) Makefile
	$(call gen_schema,schema_pg_sql,$(SCHEMA_PG))

$(BUILD)/obj/%.o: src/%.c $(wildcard include/*.h) $(BUILD)/gen/schema_sql.h $(BUILD)/gen/schema_pg_sql.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libhookd.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(HOOKD): $(MAIN_OBJ) $(BUILD)/libhookd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the unit tests' in-memory storage backend, linked into every test
TEST_MEM := $(BUILD)/tests/store_mem.o
$(TEST_MEM): tests/unit/store_mem.c $(wildcard include/*.h) $(wildcard tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libhookd.a $(TEST_MEM) $(wildcard tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -o $@ $< $(TEST_MEM) $(BUILD)/libhookd.a $(LDFLAGS) $(LDLIBS) -lcmocka

# With the PostgreSQL backend built in, the behaviour table runs against a
# private throwaway cluster too (tests/pg/cluster.sh; PostgreSQL from apt).
PG_RUN := $(if $(filter 1,$(WITH_PG)),tests/pg/cluster.sh run,)

unit: $(UNIT_BINS)
	@$(PG_RUN) sh -c 'fail=0; for t in $(UNIT_BINS); do \
	  echo "== $$t"; (cd tests/unit && ../../$$t) || fail=1; done; exit $$fail'

# HOOKD_BIN picks the binary under test (the static one, an installed one).
# Most tests wait on hookd and its receivers rather than on the CPU, so
# they run PYTEST_JOBS at a time (pytest-xdist); the ones marked serial
# (wall-clock bounds, latency comparisons, heavy loads) run after them,
# alone, so a busy machine cannot fail them.
HOOKD_BIN ?= $(abspath $(HOOKD))
PYTEST_JOBS ?= 4
XDIST = $(if $(filter-out 0 1,$(PYTEST_JOBS)),$(shell $(PYTHON) -c 'import xdist' 2>/dev/null && printf -- '-n %s' $(PYTEST_JOBS)))
integration: $(HOOKD)
	HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x $(XDIST) -m 'not serial' tests/integration $(PYTEST_ARGS)
	HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x -m serial tests/integration $(PYTEST_ARGS)

# The core, delivery and health suites again with hookd on PostgreSQL
# (a private cluster per test process, a database per daemon; conftest.py).
PG_SUITES := tests/integration/test_core.py tests/integration/test_delivery.py tests/integration/test_health.py \
	tests/integration/test_messages.py tests/integration/test_erase.py
# PG_SERIAL=0 leaves out their serial phase: `make test` does, to stay
# within five minutes; `make integration-pg-all` (CI) runs every suite's.
PG_SERIAL ?= 1
integration-pg: $(HOOKD)
	HOOKD_TEST_BACKEND=postgres HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x $(XDIST) -m 'not serial' $(PG_SUITES) $(PYTEST_ARGS)
	$(if $(filter 1,$(PG_SERIAL)),HOOKD_TEST_BACKEND=postgres HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x -m serial $(PG_SUITES) $(PYTEST_ARGS))

# Every integration suite with hookd on PostgreSQL; what cannot apply there
# is skipped with its reason (the marker sqlite_only, conftest.py).
integration-pg-all: $(HOOKD)
	HOOKD_TEST_BACKEND=postgres HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x $(XDIST) -m 'not serial' tests/integration $(PYTEST_ARGS)
	HOOKD_TEST_BACKEND=postgres HOOKD_BIN=$(HOOKD_BIN) $(PYTHON) -m pytest -q -x -m serial tests/integration $(PYTEST_ARGS)

# The mutation check: each mutant of tests/mutants/mutants.txt applied to a
# scratch copy (build/mutants/), built, and killed by its tests, or this fails.
mutants: all
	$(PYTHON) tests/mutants/run.py $(MUTANTS_ARGS)

# Builds use every core (the tests themselves run one suite at a time).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) -j$(JOBS) unit
	$(MAKE) -j$(JOBS) fuzz-regress
	$(PYTHON) tests/mutants/run.py --check
	$(MAKE) integration
	$(if $(filter 1,$(WITH_PG)),$(MAKE) integration-pg PG_SERIAL=0)

asan: deps
	LSAN_OPTIONS="suppressions=$(CURDIR)/tests/lsan.supp $(LSAN_OPTIONS)" \
	  $(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  all unit integration $(if $(filter 1,$(WITH_PG)),integration-pg)

# ThreadSanitizer over the same suites. TSAN_OPTIONS: halt_on_error makes
# a race fail the test that provoked it; second_deadlock_stack helps read
# lock-order reports; report_thread_leaks=0 because a fatal storage error
# ends the process with _exit(75) on purpose, without joining the threads
# (nothing may touch the database again), which TSan calls a leak.
tsan: deps
	$(MAKE) BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" SAN="-fsanitize=thread" all unit
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 report_thread_leaks=0 $(TSAN_OPTIONS)" \
	  $(MAKE) BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" SAN="-fsanitize=thread" integration \
	  $(if $(filter 1,$(WITH_PG)),integration-pg)

# Serves var/hookd.ini, a copy of conf/hookd.ini made on the first run:
# experiments stay out of the tracked file the packages are built from.
RUN_CONF := var/hookd.ini
run: deps-build
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@mkdir -p var
	@if [ ! -f $(RUN_CONF) ]; then cp conf/hookd.ini $(RUN_CONF) && \
	  echo "run: copied conf/hookd.ini to $(RUN_CONF); edit that copy"; fi
	@sock=$$($(HOOKD) check-config -c $(RUN_CONF) | sed -n 's/^socket = \([^ ]*\).*/\1/p'); \
	$(HOOKD) serve -c $(RUN_CONF) & pid=$$!; \
	trap 'kill -TERM $$pid 2>/dev/null; wait $$pid; exit 0' INT TERM; \
	while kill -0 $$pid 2>/dev/null && ! $(HOOKD) ping -c $(RUN_CONF) >/dev/null 2>&1; do sleep 0.1; done; \
	kill -0 $$pid 2>/dev/null && echo "hookd ready: socket $$sock (try: $(HOOKD) stats -c $(RUN_CONF))"; \
	wait $$pid

clean:
	rm -rf build build-asan build-tsan var

-include packaging/packaging.mk
-include tests/bench/bench.mk
-include tests/fuzz/fuzz.mk
-include tests/fault/fault.mk
-include tests/bench/stall.mk
-include tests/bench/hostile.mk
