package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/buzzrelay/buzz/messaging"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/tenant"
)

// Config is everything buzzd reads from its environment and flags. It is
// built only by parseConfig, which validates every field.
type Config struct {
	// RelayURL is the public WebSocket URL of this relay (RELAY_URL). Its
	// normalized host is mapped to a community at start and names this
	// relay in NIP-42 AUTH.
	RelayURL string
	// RelayHost is tenant.NormalizeHost of RelayURL's authority.
	RelayHost string
	// BindAddr is the TCP address the HTTP server listens on.
	BindAddr string
	// DataDir holds the embedded store; unused when DatabaseURL is set.
	DataDir string
	// DatabaseURL selects PostgreSQL when non-empty.
	DatabaseURL string
	// AutoMigrate applies PostgreSQL migrations at start.
	AutoMigrate bool
	// DBMaxConns sizes the PostgreSQL pool (0 = the store's default).
	DBMaxConns int
	// DBRLSRole is the row-level-security role PostgreSQL connections
	// switch to; "" connects as the URL's user unchanged.
	DBRLSRole string
	// DBAnalyzeInterval is how often the PostgreSQL store vacuums and analyses event
	// tables with stale planner statistics (0 = its analyser off).
	DBAnalyzeInterval time.Duration
	// DBEventCacheMiB sizes the embedded store's in-memory cache of stored
	// events (embedded.WithEventCache), in MiB; 0 turns it off.
	DBEventCacheMiB int
	// DBReadMmapMiB is how much of the embedded store's file each read
	// connection maps (embedded.WithReadMmap), in MiB; 0 turns it off.
	DBReadMmapMiB int
	// DBMaintainIdle and DBMaintainMax are when the embedded store
	// checkpoints its write-ahead log and merges its text index in the
	// background (embedded.WithMaintenanceDelay); idle 0 turns that off.
	DBMaintainIdle, DBMaintainMax time.Duration
	// AuthRequired makes every read and write wait for NIP-42 AUTH.
	AuthRequired bool
	// RequireRelayMembership makes every community members-only (NIP-43
	// relay membership; buzz.WithRelayMembershipRequired).
	RequireRelayMembership bool
	// Limits are enforced by the relay and advertised in NIP-11.
	Limits buzz.Limits
	// KindAllowList is the kinds clients may publish (BUZZ_KIND_ALLOWLIST);
	// off (every kind) by default.
	KindAllowList messaging.Kinds
	// TrustedProxies are the reverse proxies whose X-Forwarded-For header
	// names the client (buzz.WithTrustedProxies).
	TrustedProxies []netip.Prefix
	// Info is the relay's NIP-11 self-description.
	Info buzz.Info
	// LogLevel and LogFormat ("text" or "json") configure the logger.
	LogLevel  slog.Level
	LogFormat string
	// LogSummaryInterval is how often the relay logs its summary line
	// (buzz.WithLogSummary); 0 turns it off.
	LogSummaryInterval time.Duration
	// DebugAddr, when set, serves net/http/pprof on its own listener.
	DebugAddr string
	// ShutdownTimeout bounds the graceful shutdown after SIGINT/SIGTERM.
	ShutdownTimeout time.Duration
	// Operator configures the operator API (see operator.go).
	Operator OperatorConfig
	// AdminHost is the operators' console host (BUZZ_ADMIN_HOST, see
	// admin.go), normalized; "" when unset.
	AdminHost string
	// Cluster configures Redis and shared limits (see cluster.go).
	Cluster ClusterConfig
	// Metrics configures the Prometheus endpoint (see metrics.go).
	Metrics MetricsConfig
	// RelayKey is the relay's master key (BUZZ_RELAY_PRIVATE_KEY; see
	// relaykey.go), nil when unset.
	RelayKey *nostr.SecretKey
	// Workflows configures the workflow engine (see workflows.go).
	Workflows WorkflowConfig
	// Warnings are mistakes parseConfig noticed that do not stop buzzd
	// (a listening port no client of RELAY_URL reaches); serve logs them.
	Warnings []string

	port string // BUZZ_PORT, applied after every setting is read
}

// Defaults that are buzzd's own (the relay's limits default to
// buzz.DefaultLimits()).
const (
	defaultRelayURL        = "ws://localhost:3000"
	defaultBindHost        = "0.0.0.0"
	defaultBindPort        = "3000"
	defaultDataDir         = "./buzz-data"
	defaultShutdownTimeout = 15 * time.Second
)

// setting is one configuration key: its environment variable, its flag, the
// default shown in help and in docs/configuration.md, and how a value is applied. Every
// key buzzd understands is listed in settings, the one place config is
// defined.
type setting struct {
	env    string
	flag   string
	def    string // default as documented
	usage  string
	isBool bool
	secret bool // never echo the value in errors
	apply  func(c *Config, v string) error
}

// settings returns the full configuration table, in documentation order.
func settings() []setting {
	lim := buzz.DefaultLimits()
	return append([]setting{
		{env: "RELAY_URL", flag: "relay-url", def: defaultRelayURL,
			usage: "public ws:// or wss:// URL of this relay; its host is mapped to a community at start and is the NIP-42 relay tag",
			apply: func(c *Config, v string) error { c.RelayURL = v; return nil }},
		{env: "BUZZ_BIND_ADDR", flag: "bind", def: "from RELAY_URL",
			usage: "host:port to listen on; default 0.0.0.0 with RELAY_URL's explicit non-default port, else 0.0.0.0:3000",
			apply: func(c *Config, v string) error {
				if err := validateBindAddr(v); err != nil {
					return err
				}
				c.BindAddr = v
				return nil
			}},
		{env: "BUZZ_PORT", flag: "port", def: "from RELAY_URL",
			usage: "port to listen on (0.0.0.0:PORT); when RELAY_URL is unset it becomes ws://localhost:PORT, so the mapped host moves with the port",
			apply: func(c *Config, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 65535 {
					return errors.New("want a port number 1-65535")
				}
				c.port = v
				return nil
			}},
		{env: "BUZZ_DATA_DIR", flag: "data-dir", def: defaultDataDir,
			usage: "directory of the embedded store (used when DATABASE_URL is unset); created if missing",
			apply: func(c *Config, v string) error {
				if strings.TrimSpace(v) == "" {
					return errors.New("must not be empty")
				}
				c.DataDir = v
				return nil
			}},
		{env: "DATABASE_URL", flag: "database-url", def: "(unset)", secret: true,
			usage: "PostgreSQL connection URL (postgres://…); set = PostgreSQL backend, unset = embedded store",
			apply: func(c *Config, v string) error {
				if err := validateDatabaseURL(v); err != nil {
					return err
				}
				c.DatabaseURL = v
				return nil
			}},
		{env: "BUZZ_AUTO_MIGRATE", flag: "auto-migrate", def: "false", isBool: true,
			usage: "apply PostgreSQL migrations at start (the embedded store always migrates itself)",
			apply: func(c *Config, v string) (err error) { c.AutoMigrate, err = parseBool(v); return err }},
		{env: "BUZZ_DB_MAX_CONNS", flag: "db-max-conns", def: "16",
			usage: "PostgreSQL connection pool size (2-1000)",
			apply: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 2 || n > 1000 {
					return errors.New("want an integer from 2 to 1000")
				}
				c.DBMaxConns = n
				return nil
			}},
		{env: "BUZZ_DB_RLS_ROLE", flag: "db-rls-role", def: postgres.DefaultRLSRole,
			usage: "role (without BYPASSRLS) every PostgreSQL connection switches to with SET ROLE; `none` when the DATABASE_URL user already is such a role",
			apply: func(c *Config, v string) error {
				if v == "none" {
					c.DBRLSRole = ""
					return nil
				}
				if !isRoleName(v) {
					return errors.New("want a lowercase role name ([a-z_][a-z0-9_]*) or none")
				}
				c.DBRLSRole = v
				return nil
			}},
		{env: "BUZZ_DB_ANALYZE_INTERVAL", flag: "db-analyze-interval", def: "1m",
			usage: "how often the PostgreSQL store vacuums and analyses the event partitions whose planner statistics are stale (autovacuum never analyses partitioned tables; the vacuum sets the visibility map index-only counts need); 0 = off, only when something else analyses them",
			apply: func(c *Config, v string) error {
				d, err := time.ParseDuration(strings.TrimSpace(v))
				if err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
					return errors.New("want 0 or a Go duration from 1s to 24h, such as 1m")
				}
				c.DBAnalyzeInterval = d
				return nil
			}},
		{env: "BUZZ_DB_EVENT_CACHE_MIB", flag: "db-event-cache-mib", def: strconv.Itoa(defaultEventCacheMiB),
			usage: "MiB of stored events the embedded store keeps in memory, so the events queries return most often are not read from disk; 0 = off; PostgreSQL ignores it",
			apply: func(c *Config, v string) (err error) { c.DBEventCacheMiB, err = parseMiB(v, 1<<20); return err }},
		{env: "BUZZ_DB_READ_MMAP_MIB", flag: "db-read-mmap-mib", def: strconv.Itoa(defaultReadMmapMiB),
			usage: "MiB of the embedded store's file each read connection maps into memory, so reads take pages from the OS page cache without a system call each (an I/O error on a mapped page stops the process instead of failing the read); 0 = off; PostgreSQL ignores it",
			apply: func(c *Config, v string) (err error) {
				c.DBReadMmapMiB, err = parseMiB(v, defaultReadMmapMiB)
				return err
			}},
		{env: "BUZZ_DB_MAINTAIN_IDLE", flag: "db-maintain-idle", def: embedded.DefaultMaintainIdle.String(),
			usage: "how long the embedded store waits after its last write and its last read before it checkpoints its write-ahead log and merges its text index in the background, keeping that work out of the commits that acknowledge events and out of the reads' way; 0 = off (SQLite then does both inside commits); PostgreSQL ignores it",
			apply: func(c *Config, v string) (err error) { c.DBMaintainIdle, err = parseMaintainDelay(v); return err }},
		{env: "BUZZ_DB_MAINTAIN_MAX", flag: "db-maintain-max", def: embedded.DefaultMaintainMax.String(),
			usage: "the longest the embedded store defers that background upkeep while writes or reads keep coming, from the first write it has not handled; at least BUZZ_DB_MAINTAIN_IDLE; PostgreSQL ignores it",
			apply: func(c *Config, v string) (err error) { c.DBMaintainMax, err = parseMaintainDelay(v); return err }},
		{env: "BUZZ_AUTH_REQUIRED", flag: "auth-required", def: "false", isBool: true,
			usage: "require NIP-42 AUTH before any REQ, COUNT or EVENT",
			apply: func(c *Config, v string) (err error) { c.AuthRequired, err = parseBool(v); return err }},
		{env: "BUZZ_REQUIRE_RELAY_MEMBERSHIP", flag: "require-relay-membership", def: "false", isBool: true,
			usage: "require relay membership (NIP-43) to read and write: in every community only its owner and members (9030), authenticated; others are refused restricted: not a relay member",
			apply: func(c *Config, v string) (err error) { c.RequireRelayMembership, err = parseBool(v); return err }},
		{env: "BUZZ_MAX_FRAME_BYTES", flag: "max-frame-bytes", def: strconv.Itoa(lim.MaxFrameBytes),
			usage: "largest WebSocket message accepted; larger ones get a NOTICE and the connection is closed",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxFrameBytes, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_SUBSCRIPTIONS", flag: "max-subscriptions", def: strconv.Itoa(lim.MaxSubscriptions),
			usage: "open subscriptions per connection",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxSubscriptions, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_FILTERS", flag: "max-filters", def: strconv.Itoa(lim.MaxFilters),
			usage: "filters per REQ or COUNT",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxFilters, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_SUBID_LENGTH", flag: "max-subid-length", def: strconv.Itoa(lim.MaxSubIDLength),
			usage: "longest subscription id, in characters",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxSubIDLength, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_LIMIT", flag: "max-limit", def: strconv.Itoa(lim.MaxLimit),
			usage: "most stored events one filter returns (larger limits are clamped)",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxLimit, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_NEGENTROPY_ITEMS", flag: "max-negentropy-items", def: strconv.Itoa(lim.MaxNegentropyItems),
			usage: "most events one NIP-77 reconciliation (NEG-OPEN, buzzd sync) runs over; larger sets are refused",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxNegentropyItems, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_NEGENTROPY_SESSIONS", flag: "max-negentropy-sessions", def: strconv.Itoa(lim.MaxNegentropySessions),
			usage: "NIP-77 sessions one connection may have open at once",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxNegentropySessions, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_GIT_MAX_REPOS_PER_PUBKEY", flag: "git-max-repos-per-pubkey", def: strconv.Itoa(lim.MaxReposPerPubKey),
			usage: "git repository names (kind 30617) one pubkey may hold in a community",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxReposPerPubKey, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_CONTENT_BYTES", flag: "max-content-bytes", def: strconv.Itoa(lim.MaxContentBytes),
			usage: "largest event content accepted, in bytes",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxContentBytes, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_FUTURE", flag: "max-future", def: fmtDuration(lim.MaxFutureSkew),
			usage: "how far ahead of the relay's clock an event's created_at may be (Go duration)",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxFutureSkew, err = parsePositiveDuration(v)
				return err
			}},
		{env: "BUZZ_MAX_GROUP_EVENT_AGE", flag: "max-group-event-age", def: fmtDuration(lim.MaxGroupEventAge),
			usage: "how far in the past the created_at of an event published into a NIP-29 group (h tag) may be; older ones are refused as late publication (Go duration)",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxGroupEventAge, err = parsePositiveDuration(v)
				return err
			}},
		{env: "BUZZ_SEND_QUEUE", flag: "send-queue", def: strconv.Itoa(lim.SendQueue),
			usage: "outbound messages buffered per connection; a live event that finds it full disconnects that slow reader",
			apply: func(c *Config, v string) (err error) { c.Limits.SendQueue, err = parsePositive(v); return err }},
		{env: "BUZZ_SEND_QUEUE_BYTES", flag: "send-queue-bytes", def: strconv.Itoa(lim.SendQueueBytes),
			usage: "bytes of outbound messages buffered per connection (and, separately, of live events held back during a replay); beyond it live delivery disconnects that reader",
			apply: func(c *Config, v string) (err error) { c.Limits.SendQueueBytes, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_FILTER_VALUES", flag: "max-filter-values", def: strconv.Itoa(lim.MaxFilterValues),
			usage: "values one filter field may list (ids, authors, kinds, each #tag); more gets CLOSED invalid:",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxFilterValues, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_SUBSCRIPTION_BYTES", flag: "max-subscription-bytes", def: strconv.Itoa(lim.MaxSubscriptionBytes),
			usage: "bytes of JSON the filters of one REQ or COUNT may take",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxSubscriptionBytes, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_MAX_CONN_FILTER_BYTES", flag: "max-conn-filter-bytes", def: strconv.Itoa(lim.MaxConnFilterBytes),
			usage: "bytes of REQ filters the open subscriptions of one connection may hold together",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxConnFilterBytes, err = parsePositive(v); return err }},
		{env: "BUZZ_QUERY_TIMEOUT", flag: "query-timeout", def: fmtDuration(lim.QueryTimeout),
			usage: "deadline of one store read (a page of a REQ, a COUNT); beyond it the read is cancelled in the store and CLOSED error: (Go duration)",
			apply: func(c *Config, v string) (err error) {
				c.Limits.QueryTimeout, err = parsePositiveDuration(v)
				return err
			}},
		{env: "BUZZ_QUERY_CONCURRENCY", flag: "query-concurrency", def: strconv.Itoa(lim.QueryConcurrency),
			usage: "REQ/COUNT queries of one connection running at once",
			apply: func(c *Config, v string) (err error) { c.Limits.QueryConcurrency, err = parsePositive(v); return err }},
		{env: "BUZZ_RELAY_QUERY_CONCURRENCY", flag: "relay-query-concurrency", def: "(the store's)",
			usage: "store reads running at once relay-wide, served in turn across communities and connections; default: what the store serves (3 embedded, PostgreSQL pool less committers and 2)",
			apply: func(c *Config, v string) (err error) {
				c.Limits.RelayQueryConcurrency, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_COMMUNITY_QUERY_SHARE", flag: "community-query-share", def: "(3/4 of them)",
			usage: "of those reads, how many one community may hold at once",
			apply: func(c *Config, v string) (err error) {
				c.Limits.CommunityQueryShare, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_MESSAGE_RATE", flag: "message-rate", def: strconv.Itoa(lim.MessageRate),
			usage: "messages per second one connection may send (sustained); beyond it messages are refused rate-limited:",
			apply: func(c *Config, v string) (err error) { c.Limits.MessageRate, err = parsePositive(v); return err }},
		{env: "BUZZ_MESSAGE_BURST", flag: "message-burst", def: strconv.Itoa(lim.MessageBurst),
			usage: "messages one connection may send in a burst above that rate",
			apply: func(c *Config, v string) (err error) { c.Limits.MessageBurst, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_CONNECTIONS", flag: "max-connections", def: strconv.Itoa(lim.MaxConnections),
			usage: "open WebSocket connections relay-wide; beyond it upgrades get HTTP 503",
			apply: func(c *Config, v string) (err error) { c.Limits.MaxConnections, err = parsePositive(v); return err }},
		{env: "BUZZ_MAX_CONNECTIONS_PER_ADDRESS", flag: "max-connections-per-address", def: strconv.Itoa(lim.MaxConnectionsPerAddress),
			usage: "open WebSocket connections per client address (see BUZZ_TRUSTED_PROXIES); beyond it upgrades get HTTP 429",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxConnectionsPerAddress, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_MAX_COMMUNITY_CONNECTIONS", flag: "max-community-connections", def: "(no limit)",
			usage: "open WebSocket connections per community; beyond it upgrades get HTTP 503",
			apply: func(c *Config, v string) (err error) {
				c.Limits.MaxCommunityConnections, err = parsePositive(v)
				return err
			}},
		{env: "BUZZ_TRUSTED_PROXIES", flag: "trusted-proxies", def: "(none)",
			usage: "comma-separated addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client",
			apply: func(c *Config, v string) (err error) { c.TrustedProxies, err = parsePrefixes(v); return err }},
		{env: "BUZZ_KIND_ALLOWLIST", flag: "kind-allowlist", def: "off",
			usage: "the kinds clients may publish, others refused restricted: unknown event kind: off (every kind), buzz (the kinds a Buzz relay accepts), or a comma-separated list of kinds, low-high ranges and buzz, such as buzz,30023,5000-5999; the relay's list: a community may set its own (buzzd admin community kinds)",
			apply: func(c *Config, v string) (err error) {
				c.KindAllowList, err = messaging.ParseKinds(v)
				if err != nil {
					return errors.New("want off, buzz, or a comma-separated list of kinds, low-high ranges and buzz")
				}
				return nil
			}},
		{env: "BUZZ_EVENT_CONCURRENCY", flag: "event-concurrency", def: strconv.Itoa(lim.EventConcurrency),
			usage: "EVENTs of one connection processed at once (pipelined clients get OKs out of order)",
			apply: func(c *Config, v string) (err error) { c.Limits.EventConcurrency, err = parsePositive(v); return err }},
		{env: "BUZZ_RELAY_NAME", flag: "relay-name", def: "buzz",
			usage: "NIP-11 name",
			apply: func(c *Config, v string) error { c.Info.Name = v; return nil }},
		{env: "BUZZ_RELAY_DESCRIPTION", flag: "relay-description", def: "(empty)",
			usage: "NIP-11 description",
			apply: func(c *Config, v string) error { c.Info.Description = v; return nil }},
		{env: "BUZZ_RELAY_PUBKEY", flag: "relay-pubkey", def: "(the relay key's public key)",
			usage: "NIP-11 pubkey of the relay's administrator, 64 hex characters or npub1…",
			apply: func(c *Config, v string) error {
				pk, err := nostr.ParsePubKey(v)
				if err != nil {
					return errors.New("must be 64 hex characters or an npub")
				}
				c.Info.PubKey = pk
				return nil
			}},
		{env: "BUZZ_RELAY_CONTACT", flag: "relay-contact", def: "(empty)",
			usage: "NIP-11 contact (a URI such as mailto:ops@example.com)",
			apply: func(c *Config, v string) error { c.Info.Contact = v; return nil }},
		{env: "BUZZ_RELAY_ICON", flag: "relay-icon", def: "(empty)",
			usage: "NIP-11 icon URL",
			apply: func(c *Config, v string) error { c.Info.Icon = v; return nil }},
		{env: "BUZZ_LOG_LEVEL", flag: "log-level", def: "info",
			usage: "debug, info, warn or error",
			apply: func(c *Config, v string) error {
				if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
					return errors.New("want debug, info, warn or error")
				}
				return nil
			}},
		{env: "BUZZ_LOG_FORMAT", flag: "log-format", def: "text",
			usage: "text or json (logs go to stderr)",
			apply: func(c *Config, v string) error {
				switch v = strings.ToLower(v); v {
				case "text", "json":
					c.LogFormat = v
					return nil
				}
				return errors.New("want text or json")
			}},
		{env: "BUZZ_LOG_SUMMARY_INTERVAL", flag: "log-summary-interval", def: "1m",
			usage: "how often an INFO line sums up the relay's activity (open connections, events in and out, refusals, workflow runs since the previous line); 0 = off",
			apply: func(c *Config, v string) error {
				d, err := time.ParseDuration(strings.TrimSpace(v))
				if err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
					return errors.New("want 0 or a Go duration from 1s to 24h, such as 1m")
				}
				c.LogSummaryInterval = d
				return nil
			}},
		{env: "BUZZ_DEBUG_ADDR", flag: "debug-addr", def: "(unset)",
			usage: "host:port of a separate listener serving Go profiles at /debug/pprof/ (keep it on loopback)",
			apply: func(c *Config, v string) error {
				if err := validateBindAddr(v); err != nil {
					return err
				}
				c.DebugAddr = v
				return nil
			}},
		{env: "BUZZ_SHUTDOWN_TIMEOUT", flag: "shutdown-timeout", def: fmtDuration(defaultShutdownTimeout),
			usage: "how long a graceful shutdown may take before connections are dropped (Go duration)",
			apply: func(c *Config, v string) (err error) { c.ShutdownTimeout, err = parsePositiveDuration(v); return err }},
	}, append(append(append(append(operatorSettings(), clusterSettings()...), relayKeySettings()...), append(adminSettings(), workflowSettings()...)...), metricsSettings()...)...)
}

// defaultEventCacheMiB is the embedded store's own default event cache.
const defaultEventCacheMiB = embedded.DefaultEventCache >> 20

// defaultReadMmapMiB is the embedded store's own default (and largest)
// read mapping, in whole MiB.
const defaultReadMmapMiB = embedded.DefaultReadMmap >> 20

// defaultConfig returns the configuration used when nothing is set.
func defaultConfig() Config {
	return Config{
		RelayURL:           defaultRelayURL,
		DataDir:            defaultDataDir,
		DBRLSRole:          postgres.DefaultRLSRole,
		DBAnalyzeInterval:  time.Minute,
		DBEventCacheMiB:    defaultEventCacheMiB,
		DBReadMmapMiB:      defaultReadMmapMiB,
		DBMaintainIdle:     embedded.DefaultMaintainIdle,
		DBMaintainMax:      embedded.DefaultMaintainMax,
		Limits:             buzz.DefaultLimits(),
		Info:               buzz.Info{Name: "buzz", Software: "https://github.com/buzzrelay/buzz", Version: buildVersion()},
		LogLevel:           slog.LevelInfo,
		LogFormat:          "text",
		LogSummaryInterval: buzz.DefaultLogSummaryInterval,
		ShutdownTimeout:    defaultShutdownTimeout,
		Workflows:          defaultWorkflowConfig(),
		Metrics:            MetricsConfig{PerCommunity: metrics.ModeAll},
	}
}

// parseConfig builds the configuration from the environment (read through
// lookupEnv; an empty variable counts as unset), then the flags in args,
// which override it. Every value is
// validated; an error names the variable or flag at fault. A request for
// help returns flag.ErrHelp.
func parseConfig(cmd string, args []string, lookupEnv func(string) (string, bool), usage io.Writer) (Config, error) {
	cfg := defaultConfig()
	bindSet := false
	set := settings()

	relayURLSet := false
	for _, s := range set {
		v, ok := lookupEnv(s.env)
		if !ok || v == "" {
			continue // an empty variable counts as unset
		}
		if err := s.apply(&cfg, v); err != nil {
			return Config{}, fmt.Errorf("%s: %w", describe(s.env, v, s.secret), err)
		}
		switch s.env {
		case "BUZZ_BIND_ADDR":
			bindSet = true
		case "RELAY_URL":
			relayURLSet = true
		}
	}

	fs := flag.NewFlagSet("buzzd "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed by us
	for _, s := range set {
		apply := func(v string) error {
			if err := s.apply(&cfg, v); err != nil {
				return err
			}
			switch s.env {
			case "BUZZ_BIND_ADDR":
				bindSet = true
			case "RELAY_URL":
				relayURLSet = true
			}
			return nil
		}
		if s.isBool {
			fs.BoolFunc(s.flag, s.usage, apply)
		} else {
			fs.Func(s.flag, s.usage, apply)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(usage)
			return Config{}, flag.ErrHelp
		}
		return Config{}, usageError{err: redactFlagError(err, set)}
	}
	if fs.NArg() > 0 {
		return Config{}, usageError{err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}

	if cfg.port != "" {
		if bindSet {
			return Config{}, usageError{err: errors.New("BUZZ_PORT (-port) and BUZZ_BIND_ADDR (-bind) both name the listening port: set one")}
		}
		cfg.BindAddr, bindSet = net.JoinHostPort(defaultBindHost, cfg.port), true
		if !relayURLSet {
			cfg.RelayURL = "ws://localhost:" + cfg.port
		}
	}
	host, bindPort, err := parseRelayURL(cfg.RelayURL)
	if err != nil {
		return Config{}, fmt.Errorf("RELAY_URL (-relay-url) %q: %w", cfg.RelayURL, err)
	}
	cfg.RelayHost = host
	if err := cfg.Operator.validate(); err != nil {
		return Config{}, err
	}
	if err := validateAdminHost(cfg); err != nil {
		return Config{}, err
	}
	if cfg.DBMaintainIdle > 0 && cfg.DBMaintainMax < cfg.DBMaintainIdle {
		return Config{}, fmt.Errorf("BUZZ_DB_MAINTAIN_MAX (-db-maintain-max) %v: want at least BUZZ_DB_MAINTAIN_IDLE (%v)", cfg.DBMaintainMax, cfg.DBMaintainIdle)
	}
	if !bindSet {
		cfg.BindAddr = net.JoinHostPort(defaultBindHost, bindPort)
	}
	if w := portMismatch(cfg.RelayURL, cfg.BindAddr); w != "" {
		cfg.Warnings = append(cfg.Warnings, w)
	}
	return cfg, nil
}

// portMismatch returns a warning when RELAY_URL names this machine (a
// loopback host) on another port than buzzd listens on: clients that reach
// the listening port send a Host no community is mapped to. A public URL
// on another port is the normal shape behind a proxy and is not warned
// about.
func portMismatch(relayURL, bindAddr string) string {
	u, err := url.Parse(relayURL)
	if err != nil {
		return ""
	}
	host, urlPort := u.Hostname(), u.Port()
	if urlPort == "" {
		urlPort = map[string]string{"ws": "80", "wss": "443"}[u.Scheme]
	}
	_, bindPort, err := net.SplitHostPort(bindAddr)
	if err != nil || bindPort == urlPort || bindPort == "0" {
		return ""
	}
	ip, ipErr := netip.ParseAddr(host)
	if host != "localhost" && !strings.HasSuffix(host, ".localhost") && (ipErr != nil || !ip.IsLoopback()) {
		return ""
	}
	return fmt.Sprintf("RELAY_URL %s names port %s but buzzd listens on %s: requests to port %s carry a host no community is mapped to (404); use -port %s alone, or set RELAY_URL=ws://%s", relayURL, urlPort, bindAddr, bindPort, bindPort, net.JoinHostPort(host, bindPort))
}

// UnknownSettings returns a warning for each variable of environ (as
// os.Environ lists them) that looks like a buzzd setting — BUZZ_, RELAY_ or
// REDIS_ prefixed — but is none, with the closest known name when one is
// near: a misspelt setting is otherwise silently ignored.
func UnknownSettings(environ []string) []string {
	known := map[string]bool{}
	var names []string
	for _, s := range settings() {
		known[s.env] = true
		names = append(names, s.env)
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if known[name] || !(strings.HasPrefix(name, "BUZZ_") || strings.HasPrefix(name, "RELAY_")) {
			continue
		}
		w := fmt.Sprintf("%s is not a buzzd setting and is ignored", name)
		if near := closest(name, names); near != "" {
			w += fmt.Sprintf(" (did you mean %s?)", near)
		}
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// closest returns the name of names nearest to s by edit distance, when it
// is within a third of s's length; "" otherwise.
func closest(s string, names []string) string {
	best, bestD := "", len(s)/3+1
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseRelayURL validates a relay URL and returns its normalized host and the
// port buzzd binds by default: the URL's explicit port unless it is the
// scheme's default (ws 80, wss 443), else 3000.
func parseRelayURL(raw string) (host, bindPort string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", errors.New("not a URL")
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return "", "", errors.New("scheme must be ws or wss")
	}
	if u.Host == "" {
		return "", "", errors.New("host is missing")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", "", errors.New("must be scheme://host[:port] with no path, query, fragment or user info")
	}
	host, err = tenant.NormalizeHost(u.Host)
	if err != nil {
		return "", "", err
	}
	bindPort = defaultBindPort
	if p := u.Port(); p != "" && !(u.Scheme == "ws" && p == "80") && !(u.Scheme == "wss" && p == "443") {
		bindPort = p
	}
	return host, bindPort, nil
}

func validateBindAddr(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("want host:port, e.g. 0.0.0.0:3000 or 127.0.0.1:3000")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return errors.New("port must be a number 0-65535")
	}
	return nil
}

func validateDatabaseURL(v string) error {
	if v == "" {
		return nil // unset: embedded store
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			return errors.New("not a valid URL")
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return errors.New("scheme must be postgres or postgresql")
		}
		return nil
	}
	if strings.Contains(v, "=") {
		return nil // keyword/value DSN ("host=… dbname=…")
	}
	return errors.New("want postgres://user@host:port/db or a keyword/value DSN")
}

// parseBool accepts true/1/yes/on and false/0/no/off, case-insensitively.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off", "":
		return false, nil
	}
	return false, errors.New("want true/false, 1/0, yes/no or on/off")
}

// parsePrefixes reads a comma-separated list of addresses (a /32 or /128
// prefix each) and CIDR prefixes.
func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func parsePositive(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive integer")
	}
	return n, nil
}

// parseMiB parses a size in MiB from 0 (off) to max.
func parseMiB(v string, max int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("want 0 to %d (MiB)", max)
	}
	return n, nil
}

// parseMaintainDelay parses one of the embedded store's maintenance
// delays: 0, or a Go duration up to an hour.
func parseMaintainDelay(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > time.Hour {
		return 0, errors.New("want 0 or a Go duration up to 1h, such as 50ms")
	}
	return d, nil
}

func parsePositiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive Go duration such as 15m or 30s")
	}
	return d, nil
}

// fmtDuration writes d as Go's ParseDuration reads it, without zero
// trailing units ("15m", not "15m0s").
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func isRoleName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func describe(name, value string, secret bool) string {
	if secret {
		return name
	}
	return fmt.Sprintf("%s=%q", name, value)
}

// redactFlagError rewrites the flag package's error (which quotes the value)
// so that secret values never reach the terminal or logs.
func redactFlagError(err error, set []setting) error {
	msg := err.Error()
	for _, s := range set {
		if s.secret && strings.Contains(msg, "-"+s.flag) {
			return fmt.Errorf("invalid value for flag -%s", s.flag)
		}
	}
	return err
}

// usageError marks a command-line mistake (exit status 2).
// usageError is a command-line mistake: exit status 2 and a pointer to the
// help of the command concerned (help, e.g. "buzzd admin help"; "" for
// buzzd's own).
type usageError struct {
	err  error
	help string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// printUsage writes buzzd's help: its commands, then every setting on one
// line (flag, variable, default); printSettingHelp explains one.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `buzzd — the buzz reference Nostr relay

Usage:
  buzzd [serve] [flags]   run the relay (default)
  buzzd migrate [flags]   apply PostgreSQL migrations to DATABASE_URL and exit
  buzzd audit verify (-host H | -all) [flags]
                          recompute audit chains (buzzd audit help)
  buzzd admin <command>   change communities, members and owners on the
                          configured store (buzzd admin help)
  buzzd export [-host H | -all] [-since T] [-until T] [-o FILE]
                          write communities, state and events as JSON lines
                          (buzzd export help)
  buzzd import [-f FILE]  read an export into the configured store
                          (buzzd import help)
  buzzd backup DIR        snapshot the embedded store into DIR while buzzd
                          serves (buzzd backup help)
  buzzd restore DIR       copy the backup in DIR into BUZZ_DATA_DIR
  buzzd sync URL [-host H] [-filter JSON] [-dir up|down|both] [flags]
                          reconcile a community with another relay over
                          NIP-77 (buzzd sync -h)
  buzzd version           print the version and exit
  buzzd help [SETTING]    print this help, or explain one setting
                          (buzzd help port, buzzd help BUZZ_DATA_DIR)

Every setting is read from its environment variable (an empty one counts
as unset); a flag overrides it. Booleans accept true/1/yes/on and
false/0/no/off. docs/configuration.md explains them all.

Settings (flag, variable, default):
`)
	set := settings()
	wf, we := 0, 0
	for _, s := range set {
		wf, we = max(wf, len(s.flag)+1), max(we, len(s.env))
	}
	for _, s := range set {
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", wf, "-"+s.flag, we, s.env, s.def)
	}
}

// printSettingHelp explains the setting named by its flag (with or
// without dashes) or its variable; it reports false when none matches.
func printSettingHelp(w io.Writer, name string) bool {
	name = strings.TrimLeft(name, "-")
	for _, s := range settings() {
		if s.flag == name || strings.EqualFold(s.env, name) {
			arg := " value"
			if s.isBool {
				arg = ""
			}
			fmt.Fprintf(w, "-%s%s  (%s, default %s)\n    %s\n", s.flag, arg, s.env, s.def, s.usage)
			return true
		}
	}
	return false
}

// configTableMarkdown renders the settings as the table of
// docs/configuration.md.
func configTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| Environment variable | Flag | Default | Meaning |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	for _, s := range settings() {
		fmt.Fprintf(&b, "| `%s` | `-%s` | `%s` | %s |\n", s.env, s.flag, s.def, strings.ReplaceAll(s.usage, "|", "\\|"))
	}
	return b.String()
}

// httpScheme is the scheme of the HTTP origins buzzd serves beside the
// relay (NIP-98 URLs of the owner API and the admin host): https when
// RELAY_URL is wss://, http when it is ws://.
func (c Config) httpScheme() string {
	if u, err := url.Parse(c.RelayURL); err == nil && u.Scheme == "wss" {
		return "https"
	}
	return "http"
}
