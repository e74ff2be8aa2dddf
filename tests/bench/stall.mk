# tests/bench/stall.mk - worst stall of acks and deliveries while the
# periodic jobs run over 100 full latency rings (10k samples each) and
# 1M expired messages (included by the top Makefile).
#   make bench-stall     about 3-4 minutes; results in build/bench/stall.txt
# Knobs (make VAR=... or environment): STALL_ROWS (samples per endpoint,
# at most 10000), STALL_OLD (expired rows, 1000000), STALL_SECS (60),
# STALL_RATE (1000/s), STALL_KEEP=1.

STALL_BIN := $(BUILD)/bench/stall

.PHONY: bench-stall

$(STALL_BIN): tests/bench/stall.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
	  $(shell $(PKG_CONFIG) --cflags sqlite3 2>/dev/null) -pthread -o $@ $< \
	  $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null || echo -lsqlite3)

bench-stall: $(HOOKD) $(STALL_BIN)
	HOOKD=$(abspath $(HOOKD)) STALL=$(abspath $(STALL_BIN)) BENCH_OUT=$(BUILD)/bench \
	  sh tests/bench/stall.sh
