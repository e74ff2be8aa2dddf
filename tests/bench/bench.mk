# tests/bench/bench.mk - benchmarks (included by the top Makefile).
#   make bench            enqueue + delivery, one summary table
#   make bench-enqueue    pipelined enqueues vs raw SQLite inserts
#   make bench-delivery   100k deliveries to nginx (1 and 100 endpoints,
#                         default config), latency at 1k/s and 10k/s,
#                         wrk ceiling, seed design, storage floor (rawcycle)
#   make bench-scale      10,000 endpoints: enqueue rate, endpoints list,
#                         memory with 1M queued over failing endpoints;
#                         then bench-search
#   make bench-search     hookd messages over 10M rows (searchdb builds
#                         them; BENCH_SEARCH_DIR=DIR keeps and reuses them)
#   make bench-postgres   hookd on PostgreSQL (one node, private durable
#                         cluster): enqueue, preloaded and streamed delivery,
#                         ratio to the seed design
#   make bench-cluster    two hookd nodes on one PostgreSQL vs one, against
#                         a receiver answering after 50 ms (nginx echo_sleep)
#   make bench-egress     the static (packaged) binary beside the dynamic one
#                         and the libcurl floor, HTTP and HTTPS, 1 and 100
#                         endpoints; 1,000 HTTPS hosts: TLS resumption, CPU;
#                         writes the table in tests/bench/README.md; the
#                         storage floor row
# Knobs (make VAR=...): BENCH_ENQ_N BENCH_DEL_N BENCH_LAT_RATES BENCH_LAT_SECS
# BENCH_WRK_SECS BENCH_SEED_N BENCH_SEED_K BENCH_SEED=0 (skip the seed)
# BENCH_SCALE_NEPS BENCH_SCALE_MSGS BENCH_SCALE_SECS BENCH_SEARCH_ROWS
# BENCH_SEARCH_NEPS BENCH_SEARCH_REPS BENCH_SEARCH_DIR BENCH_CL_N BENCH_CL_EPS
# BENCH_CL_INFLIGHT BENCH_EG_N BENCH_EG_ROUNDS BENCH_EG_HOSTS BENCH_EG_MSGS
# BENCH_EG_GAP.
# Results: build/bench/results.txt (see tests/bench/README.md).

BENCH_OUT   := $(BUILD)/bench
BENCH_TOOLS := $(BENCH_OUT)/loadgen $(BENCH_OUT)/rawinsert $(BENCH_OUT)/dbreport $(BENCH_OUT)/curlfloor \
               $(BENCH_OUT)/searchdb $(BENCH_OUT)/hookd-nofilter $(BENCH_OUT)/rawcycle $(BENCH_OUT)/wshape.so
BENCH_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
                $(shell $(PKG_CONFIG) --cflags sqlite3 2>/dev/null)
BENCH_LIBS  := $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null || echo -lsqlite3)

.PHONY: bench bench-enqueue bench-delivery bench-scale bench-search bench-postgres bench-cluster bench-egress bench-tools

$(BENCH_OUT)/loadgen: tests/bench/loadgen.c tests/bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -pthread -o $@ $<

$(BENCH_OUT)/rawinsert: tests/bench/rawinsert.c tests/bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_LIBS)

# the storage floor: hookd's own store module (libhookd.a), no daemon
$(BENCH_OUT)/rawcycle: tests/bench/rawcycle.c tests/bench/bench_common.h $(BUILD)/libhookd.a $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libhookd.a $(LDFLAGS) $(LDLIBS)

# the writer's round sizes in a real run (LD_PRELOAD into hookd)
$(BENCH_OUT)/wshape.so: tests/bench/wshape.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -shared -fPIC -o $@ $< $(BENCH_LIBS) -ldl

$(BENCH_OUT)/searchdb: tests/bench/searchdb.c tests/bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_LIBS)

$(BENCH_OUT)/dbreport: tests/bench/dbreport.c tests/bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_LIBS)

$(BENCH_OUT)/curlfloor: tests/bench/curlfloor.c tests/bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(shell $(PKG_CONFIG) --cflags libcurl 2>/dev/null) -o $@ $< \
	  $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null || echo -lcurl)

# hookd with the filter hook compiled out (intake.c's filtered_out answers
# 0 without looking at the endpoint): the baseline of the enqueue section's
# "filter hook" row. Its intake.o comes first, so the archive's is not linked.
$(BENCH_OUT)/intake-nofilter.o: src/intake.c $(wildcard include/*.h) $(BUILD)/gen/schema_sql.h $(BUILD)/gen/schema_pg_sql.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DHOOKD_BENCH_NO_FILTER=1 $(CFLAGS) -c -o $@ $<

$(BENCH_OUT)/hookd-nofilter: $(MAIN_OBJ) $(BENCH_OUT)/intake-nofilter.o $(BUILD)/libhookd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bench-tools: $(BENCH_TOOLS)

# curlfloor on the static build's libcurl (mbedTLS) and allocator: the
# floor of the packaged binary (after `static`, which builds the prefix)
STATIC_PREFIX = $(or $(STATIC_CACHE),packaging/.cache)/prefix
$(BENCH_OUT)/curlfloor-static: tests/bench/curlfloor.c tests/bench/bench_common.h static
	@mkdir -p $(@D)
	musl-gcc -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I$(STATIC_PREFIX)/include -o $@ $< -static \
	  $(STATIC_PREFIX)/lib/mimalloc.o -L$(STATIC_PREFIX)/lib -lcurl -lmbedtls -lmbedx509 -lmbedcrypto -pthread

BENCH_ENV = HOOKD=$(abspath $(HOOKD)) BENCH_BIN=$(abspath $(BENCH_OUT)) \
            HOOKD_STATIC=$(abspath $(STATIC_BUILD))/hookd

# the packaged binary is measured beside the dynamic one (static: packaging.mk)
bench: $(HOOKD) $(BENCH_TOOLS) static $(BENCH_OUT)/curlfloor-static
	$(BENCH_ENV) tests/bench/run.sh all

bench-enqueue: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh enqueue

bench-delivery: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh delivery

bench-scale: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh scale

bench-search: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh search

bench-postgres: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh postgres

bench-cluster: $(HOOKD) $(BENCH_TOOLS)
	$(BENCH_ENV) tests/bench/run.sh cluster

bench-egress: $(HOOKD) $(BENCH_TOOLS) static $(BENCH_OUT)/curlfloor-static
	$(BENCH_ENV) tests/bench/run.sh egress
