// Package control keeps every relay process ("pod") of a deployment
// consistent when a community's state changes, and holds the two pieces a
// multi-pod deployment needs to archive a community everywhere at once.
//
// # Messages and the bus
//
// A Message is one per-community state change: membership or channel
// visibility changed (invalidate caches, close revoked subscriptions),
// disconnect one pubkey, disconnect a whole community, a community's hosts
// changed, a restriction or the access policy changed. A Bus carries them:
// Local delivers within one process; *redis.Broker (package pubsub/redis)
// implements Bus across pods. buzz.Relay listens to its bus (buzz.WithControlBus)
// and acts on every message. Messages are typed Go values; on the wire they
// travel as a small JSON envelope (Encode, Decode) whose unknown types are
// reported as ErrUnknownType so a receiver can log and ignore them — old
// pods keep working when new message types appear.
//
// # Archiving a community on every pod
//
// Disconnector closes a community's connections on every process (it is the
// operator API's operator.Disconnector for a deployment of several pods).
// ArchiveFence is the relay's host directory in such a deployment: it
// refuses an archived community for as long as any pod's host cache may
// still resolve its hosts, so no pod binds a new connection to it. Wire
// both like this (a single process needs neither, but both work over Local):
//
//	cache, _ := tenant.NewCachingDirectory(st)
//	fence, _ := control.NewArchiveFence(cache, tenant.DefaultCacheTTL+time.Second)
//	relay, _ := buzz.New(buzz.WithDirectory(fence), buzz.WithControlHook(fence.OnControl),
//		buzz.WithBroker(b), buzz.WithControlBus(b), …)
//	disc, _ := control.NewDisconnector(relay)
//	api, _ := operator.New(operator.WithStore(st), operator.WithDisconnector(disc),
//		operator.WithHostInvalidator(fence.Invalidate), operator.WithControlPublisher(relay), …)
//
// # Dependencies
//
// Package control depends only on package tenant. It must not import the
// relay (package buzz), a store, or a broker implementation such as
// pubsub/redis: they import it, and a single-process embedder must not link
// Redis to use it.
package control
