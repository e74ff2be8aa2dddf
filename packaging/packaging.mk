# Packaging targets; included by the top Makefile (-include packaging/packaging.mk).
#   make static        fully static musl x86-64 build/static/hookd (+ .stripped)
#   make static-test   the integration suite against the static binary
#   make deb / rpm     packages from the static binary, in packaging/out/
#                      (refused while conf/ has uncommitted changes)
#   make package-test  integration suite on the static binary, then build both
#                      packages and test them (lintian, installs, smoke test)
#   make packaging-clean   drop packaging/out and the dependency cache

STATIC_BUILD := build/static
STATIC_BIN   := $(STATIC_BUILD)/hookd

.PHONY: static static-test deb rpm package-test packaging-clean

static:
	MAKE="$(MAKE)" STATIC_BUILD=$(STATIC_BUILD) packaging/static.sh

static-test: static
	$(MAKE) integration HOOKD_BIN=$(CURDIR)/$(STATIC_BIN)

# The packaged /etc/hookd/hookd.ini is made from conf/hookd.ini: refuse
# to package edits that were never committed (make run serves var/hookd.ini).
.PHONY: conf-clean
conf-clean:
	@if [ -n "$$(git status --porcelain conf/ 2>/dev/null)" ]; then \
	  echo "packaging: conf/ has uncommitted changes; commit or revert them (git status conf/):" >&2; \
	  git status --porcelain conf/ >&2; exit 1; fi

deb: conf-clean static
	packaging/mkdeb.sh packaging/out

rpm: conf-clean static
	packaging/mkrpm.sh packaging/out

# The integration suite runs against the static binary too, then the packages.
package-test: static
	$(MAKE) integration HOOKD_BIN=$(CURDIR)/$(STATIC_BIN)
	packaging/mkdeb.sh packaging/out
	packaging/mkrpm.sh packaging/out
	packaging/package-test.sh packaging/out

packaging-clean:
	rm -rf packaging/out packaging/.cache
