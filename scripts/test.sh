#!/usr/bin/env bash
# The README's test command: make sure PostgreSQL (127.0.0.1:5432) and Redis
# (127.0.0.1:6379) answer, starting or installing them if needed, then run
# every test of the module with the race detector, then the nostr package's
# tests and its signing and verification benchmarks (one iteration each,
# for correctness) again with -tags libsecp256k1, which verifies with the
# system libsecp256k1 (Debian: libsecp256k1-dev) instead of pure Go. Extra
# arguments go to `go test` instead (e.g. ./scripts/test.sh -run TestRestart
# ./cmd/buzzd).
#
# With CI=true, missing services and libsecp256k1 are installed (Debian, as
# root) and a service that still does not answer fails the run; tests that
# need one fail rather than skip.
set -uo pipefail

cd "$(dirname "$0")/.."
export CI="${CI:-}"

PG_HOST=127.0.0.1 PG_PORT=5432 REDIS_HOST=127.0.0.1 REDIS_PORT=6379
WAIT_SECONDS="${BUZZ_SERVICE_WAIT:-60}"

log() { printf 'test.sh: %s\n' "$*" >&2; }

have() { command -v "$1" >/dev/null 2>&1; }

pg_up() { have pg_isready && pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -U postgres; }
redis_up() { have redis-cli && [ "$(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; }
secp_up() { have pkg-config && pkg-config --exists libsecp256k1 && [ -f "$(pkg-config --variable=includedir libsecp256k1)/secp256k1_schnorrsig.h" ]; }

can_install() {
	[ "$(id -u)" = 0 ] && have apt-get && [ -f /etc/debian_version ]
}

install_packages() {
	# $@: Debian packages to install.
	log "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 && apt-get install -y -qq "$@" >&2
}

need_install=()
if ! have pg_ctlcluster || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
	pg_up || need_install+=(postgresql)
fi
if ! have redis-server; then
	redis_up || need_install+=(redis-server)
fi
# The approval page's browser tests drive a headless Chromium.
if ! have chromium && ! have chromium-browser; then
	need_install+=(chromium)
fi
# The -tags libsecp256k1 build links the system libsecp256k1 (with its
# schnorrsig and extrakeys modules), found with pkg-config.
if ! secp_up; then
	have pkg-config || need_install+=(pkg-config)
	need_install+=(libsecp256k1-dev)
fi
if [ ${#need_install[@]} -gt 0 ]; then
	if can_install; then
		# Root on Debian (CI on a fresh machine, a throwaway container): install.
		log "missing: ${need_install[*]}; installing with apt-get"
		install_packages "${need_install[@]}" || { log "could not install ${need_install[*]}"; exit 1; }
	else
		log "missing: ${need_install[*]}"
		log "install them with:  sudo apt-get install -y postgresql redis-server chromium pkg-config libsecp256k1-dev"
		log "(the tests need PostgreSQL on $PG_HOST:$PG_PORT with trust auth for user postgres, and Redis on $REDIS_HOST:$REDIS_PORT)"
		exit 1
	fi
fi

if ! pg_up; then
	log "starting PostgreSQL"
	ver="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)"
	if [ -n "$ver" ]; then
		pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || log "pg_ctlcluster failed"
	fi
fi
if ! redis_up; then
	log "starting Redis"
	redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >&2 || log "redis-server failed"
fi

deadline=$((SECONDS + WAIT_SECONDS))
until pg_up && redis_up; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		pg_up || log "PostgreSQL does not answer on $PG_HOST:$PG_PORT"
		redis_up || log "Redis does not answer on $REDIS_HOST:$REDIS_PORT"
		if [ "$CI" = true ]; then
			log "CI=true: services are required"
			exit 1
		fi
		log "continuing without them: tests that need them will skip (set CI=true to make them fail)"
		break
	fi
	sleep 1
done
pg_up && redis_up && log "PostgreSQL and Redis are up"

# A fresh Debian PostgreSQL uses password auth over TCP; the tests expect
# trust for user postgres on loopback, and a database named test. As root
# (CI on a fresh machine) set that up; otherwise say what is missing.
pg_login() { psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -tAc "$1" 2>/dev/null; }
if pg_up && have psql && ! pg_login 'select 1' >/dev/null; then
	if [ "$(id -u)" = 0 ] && have runuser; then
		hba="$(runuser -u postgres -- psql -tAc 'show hba_file' 2>/dev/null || true)"
		if [ -n "$hba" ] && [ -f "$hba" ]; then
			log "allowing trust auth for loopback TCP in $hba"
			printf 'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' | cat - "$hba" >"$hba.buzz" && mv "$hba.buzz" "$hba"
			chown postgres: "$hba"
			runuser -u postgres -- psql -tAc 'select pg_reload_conf()' >/dev/null
			sleep 1
		fi
	fi
	if ! pg_login 'select 1' >/dev/null; then
		log "PostgreSQL is up but user postgres cannot log in over TCP without a password;"
		log "add 'host all all 127.0.0.1/32 trust' at the top of pg_hba.conf and reload"
		[ "$CI" = true ] && exit 1
	fi
fi
if pg_up && have psql && pg_login 'select 1' >/dev/null && [ "$(pg_login "select 1 from pg_database where datname = 'test'")" != 1 ]; then
	log "creating database test"
	pg_login 'create database test' >/dev/null || log "could not create database test"
fi

if [ $# -eq 0 ]; then
	log "go test -race -count=1 -timeout 45m ./..."
	go test -race -count=1 -timeout 45m ./...
	status=$?
	# Stopping and starting the shared PostgreSQL would break every test
	# running beside it, so the server-restart test runs alone, afterwards.
	log "BUZZ_PG_RESTART_TEST=1 go test -race -count=1 -run '^TestServerRestartMidLoad$' ./store/postgres/"
	BUZZ_PG_RESTART_TEST=1 go test -race -count=1 -timeout 10m -run '^TestServerRestartMidLoad$' -v ./store/postgres/
	restart_status=$?
	# The same nostr tests, fuzz seeds and benchmark bodies with the system
	# libsecp256k1 verifying instead of the pure-Go one.
	log "go test -tags libsecp256k1 -race -count=1 -bench 'Verify|Sign' -benchtime 1x ./nostr/"
	go test -tags libsecp256k1 -race -count=1 -bench 'Verify|Sign' -benchtime 1x ./nostr/
	tag_status=$?
	[ "$status" -ne 0 ] && exit "$status"
	[ "$restart_status" -ne 0 ] && exit "$restart_status"
	exit "$tag_status"
fi
log "go test -race -count=1 -timeout 45m $*"
go test -race -count=1 -timeout 45m "$@"
