# tests/fuzz/fuzz.mk - libFuzzer targets (included from the Makefile).
#
#   make fuzz           build each target with clang -fsanitize=fuzzer,address,undefined
#                       and run it for FUZZ_SECONDS (default 120) on its seed corpus
#                       (tests/fuzz/corpus/<target>/, read-only; new inputs go to
#                       $(FUZZ_OUT)/work/<target>/, crashes to $(FUZZ_OUT)/crashes/<target>/)
#   make fuzz-build     build the fuzz targets only
#   make fuzz-regress   replay every corpus file (seeds and recorded crashes) through
#                       each target built with $(CC) + ASan/UBSan and a plain main():
#                       a few seconds, no clang needed
#   FUZZ_TARGETS=proto  limit either to some targets
#   FUZZ_KNOWN=id,...   let `make fuzz` look past known, unfixed bugs (ids in the
#                       fuzz_*.c files); fuzz-regress always checks them
#
# Inputs that crashed live in tests/fuzz/crashes/<target>/: fuzz-regress replays
# each on its own (so one open bug does not hide another) and fails while any
# still crashes. tests/unit/test_fuzz_regress.c holds the same cases as cmocka tests.

FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 120
FUZZ_OUT      ?= $(BUILD)/fuzz
FUZZ_TARGETS  ?= proto config netpolicy retry_after tpl export filter esc
FUZZ_ARGS     ?=
FUZZ_KNOWN    ?=
FUZZ_CPPFLAGS := -Iinclude -I$(BUILD)/gen -D_GNU_SOURCE -DINI_HANDLER_LINENO=1 -DHOOKD_VERSION='"x"'
FUZZ_PKGS     := libcurl libcjson inih
FUZZ_CFLAGS   := -g -O1 -fno-omit-frame-pointer $(shell $(PKG_CONFIG) --cflags $(FUZZ_PKGS) 2>/dev/null)
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIBS     := $(shell $(PKG_CONFIG) --libs $(FUZZ_PKGS) 2>/dev/null) -lmbedtls -lmbedx509 -lmbedcrypto -lm

# the project sources each target compiles in (pure modules only)
FUZZ_SRCS_proto       := src/proto.c src/msgsel.c src/jpath.c src/store.c src/jscan.c src/schedule.c src/util.c src/esc.c
FUZZ_SRCS_config      := src/config.c src/settings.c src/epdef.c src/filter.c src/netpolicy.c src/sign.c src/util.c src/log.c \
                         src/tpl.c src/tplfn.c src/jpath.c src/outcome.c src/opsev.c src/esc.c src/urlmask.c src/tlsid.c src/proxy.c
FUZZ_SRCS_netpolicy   := src/netpolicy.c
FUZZ_SRCS_retry_after := src/retry_after.c
FUZZ_SRCS_esc         := src/esc.c src/util.c src/urlmask.c
FUZZ_SRCS_tpl         := src/tpl.c src/tplfn.c src/jpath.c src/util.c src/esc.c src/urlmask.c
FUZZ_SRCS_filter      := src/filter.c src/jpath.c src/util.c src/esc.c
FUZZ_SRCS_export      := src/export_fmt.c src/endpoint.c src/epdef.c src/filter.c src/settings.c src/config.c src/breaker.c \
                         src/store.c src/netpolicy.c src/sign.c src/util.c src/log.c src/tpl.c src/tplfn.c src/jpath.c \
                         src/outcome.c src/opsev.c src/esc.c src/urlmask.c src/seal.c src/tlsid.c src/proxy.c

FUZZ_BINS   := $(FUZZ_TARGETS:%=$(FUZZ_OUT)/fuzz_%)
REGRESS_BINS := $(FUZZ_TARGETS:%=$(FUZZ_OUT)/regress_%)

.PHONY: fuzz fuzz-build fuzz-regress

define FUZZ_RULES
$(FUZZ_OUT)/fuzz_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/fuzz_common.h $(wildcard include/*.h) $(FUZZ_SRCS_$(1))
	@mkdir -p $$(@D)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -o $$@ $$< $(FUZZ_SRCS_$(1)) $(FUZZ_LIBS)

$(FUZZ_OUT)/regress_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/standalone.c tests/fuzz/fuzz_common.h $(wildcard include/*.h) $(FUZZ_SRCS_$(1))
	@mkdir -p $$(@D)
	$(CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) -o $$@ $$< tests/fuzz/standalone.c $(FUZZ_SRCS_$(1)) $(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULES,$(t))))

fuzz-build: $(FUZZ_BINS)

# Each target runs FUZZ_SECONDS; all of them run even if one finds a crash,
# and the make fails at the end if any did (see $(FUZZ_OUT)/<target>.log).
fuzz: $(FUZZ_BINS)
	@fail=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_OUT)/work/$$t $(FUZZ_OUT)/crashes/$$t; \
	  dict=""; [ -f tests/fuzz/dict/$$t.dict ] && dict="-dict=tests/fuzz/dict/$$t.dict"; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS)s (log $(FUZZ_OUT)/$$t.log)"; \
	  if FUZZ_KNOWN="$(FUZZ_KNOWN)" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	     $(FUZZ_OUT)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	       -max_len=65536 -print_final_stats=1 $$dict \
	       -artifact_prefix=$(FUZZ_OUT)/crashes/$$t/ $(FUZZ_ARGS) \
	       $(FUZZ_OUT)/work/$$t tests/fuzz/corpus/$$t > $(FUZZ_OUT)/$$t.log 2>&1; then \
	    grep -aE '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|cov: ' $(FUZZ_OUT)/$$t.log | tail -4; \
	  else \
	    echo "fuzz_$$t FOUND A CRASH:"; grep -aE 'ERROR|FUZZ_CHECK|SUMMARY|Test unit written' $(FUZZ_OUT)/$$t.log | head -8; \
	    fail="$$fail $$t"; \
	  fi; \
	done; \
	if [ -n "$$fail" ]; then echo "fuzz: crashes in:$$fail (inputs in $(FUZZ_OUT)/crashes/; keep them in tests/fuzz/crashes/<target>/)"; exit 1; fi

fuzz-regress: $(REGRESS_BINS)
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(FUZZ_OUT)/regress_$$t tests/fuzz/corpus/$$t || fail=1; \
	  for f in tests/fuzz/crashes/$$t/*; do [ -f "$$f" ] || continue; \
	    if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 FUZZ_KNOWN= \
	       $(FUZZ_OUT)/regress_$$t "$$f" > $(FUZZ_OUT)/regress.out 2>&1; then \
	      echo "   fixed: $$f"; \
	    else echo "STILL CRASHES: $$f"; grep -E 'FUZZ_CHECK|ERROR:|SUMMARY' $(FUZZ_OUT)/regress.out | head -3; fail=1; fi; \
	  done; \
	done; exit $$fail
