# make install: builds topicfs (cargo builds what is missing or stale) and installs
#   $(BINDIR)/topicfs                       the command, stripped of its debug info
#   $(SBINDIR)/mount.topicfs                the helper mount(8) runs for `-t topicfs`, which
#                                           runs $(BINDIR)/topicfs
#   $(MANDIR)/man1/topicfs.1                the man page (`topicfs man`)
#   bash, zsh and fish completions          (`topicfs completions SHELL`)
# under $(DESTDIR) when it is set (for packaging). make uninstall removes them.
#
#   make install                            PREFIX=/usr/local, a release build
#   make install PREFIX=/usr DESTDIR=pkg    staged for a package
#   make install PROFILE=dev                the debug build (target/debug/topicfs)
#   make install BIN=path/to/topicfs        a binary built elsewhere (no build)
#   make install STRIP=                     the binary with its debug info

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
# mount(8) looks for helpers in /sbin only, whatever the prefix.
SBINDIR ?= /sbin
MANDIR ?= $(PREFIX)/share/man
BASH_COMPLETION_DIR ?= $(PREFIX)/share/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(PREFIX)/share/zsh/site-functions
FISH_COMPLETION_DIR ?= $(PREFIX)/share/fish/vendor_completions.d

CARGO ?= cargo
PROFILE ?= release
INSTALL ?= install
STRIP ?= strip

ifeq ($(PROFILE),dev)
PROFILE_DIR := debug
else
PROFILE_DIR := $(PROFILE)
endif

.PHONY: all build install uninstall

all: build

ifeq ($(origin BIN),undefined)
BIN := target/$(PROFILE_DIR)/topicfs
build:
	$(CARGO) build --locked --profile $(PROFILE) --bin topicfs
else
build: $(BIN)
endif

install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(BASH_COMPLETION_DIR) $(DESTDIR)$(ZSH_COMPLETION_DIR) \
		$(DESTDIR)$(FISH_COMPLETION_DIR)
	$(INSTALL) -m 755 $(BIN) $(DESTDIR)$(BINDIR)/topicfs
	$(if $(STRIP),$(STRIP) --strip-debug $(DESTDIR)$(BINDIR)/topicfs)
	sed 's|^installed=.*|installed=$(BINDIR)/topicfs|' mount-scripts/mount.topicfs \
		> $(DESTDIR)$(SBINDIR)/mount.topicfs
	chmod 755 $(DESTDIR)$(SBINDIR)/mount.topicfs
	$(BIN) man > $(DESTDIR)$(MANDIR)/man1/topicfs.1
	$(BIN) completions bash > $(DESTDIR)$(BASH_COMPLETION_DIR)/topicfs
	$(BIN) completions zsh > $(DESTDIR)$(ZSH_COMPLETION_DIR)/_topicfs
	$(BIN) completions fish > $(DESTDIR)$(FISH_COMPLETION_DIR)/topicfs.fish
	chmod 644 $(DESTDIR)$(MANDIR)/man1/topicfs.1 $(DESTDIR)$(BASH_COMPLETION_DIR)/topicfs \
		$(DESTDIR)$(ZSH_COMPLETION_DIR)/_topicfs $(DESTDIR)$(FISH_COMPLETION_DIR)/topicfs.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/topicfs $(DESTDIR)$(SBINDIR)/mount.topicfs \
		$(DESTDIR)$(MANDIR)/man1/topicfs.1 $(DESTDIR)$(BASH_COMPLETION_DIR)/topicfs \
		$(DESTDIR)$(ZSH_COMPLETION_DIR)/_topicfs $(DESTDIR)$(FISH_COMPLETION_DIR)/topicfs.fish
