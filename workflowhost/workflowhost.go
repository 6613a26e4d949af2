// Package workflowhost runs the workflow engine (package workflow) on a
// buzz relay: a feature that mounts through the relay's seam (buzz.Feature,
// buzz.WithFeature) and takes everything it acts with from buzz.Host.
//
//	wf, err := workflowhost.New(st, workflowhost.WithEngineOptions(workflow.WithLogger(logger)))
//	...
//	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(),
//		buzz.WithHTTPAuth(verifier), buzz.WithFeature(wf))
//
// Mounted, the host
//
//   - executes the workflow commands: kind 30620 (definition), 46020
//     (manual run), 46030/46031 (approval decisions), and refuses
//     workflow status events (46001–46012), which are relay-signed;
//   - matches stored messages and reactions of a channel against its
//     workflows before their OK, deletes a workflow when its 30620
//     coordinate is deleted (NIP-09), and disables the workflows of a
//     member removed from their channel;
//   - serves, on every community host, the approval page (GET
//     /approvals/{token}), incoming webhooks (POST /hooks/{id}) and, with
//     buzz.WithHTTPAuth, the workflow HTTP API (/workflows);
//   - acts for the engine with the relay's own means: events signed with
//     the community's relay key and published by the relay (send_message,
//     status events), topics set through the channel store and announced
//     by relay-signed group state (set_channel_topic), NIP-17 DMs from the
//     relay key (send_dm), approval links on the community's host, the
//     owner's rights as the relay decides them each time the workflow
//     acts (not banned or timed out, a member of a members-only community
//     and of the channel, the role the step needs), runs counted by the
//     relay's Metrics;
//   - runs the engine from the end of buzz.New until Relay.Shutdown, which
//     stops it first (its runs stop at a step boundary and their leases
//     are released for other processes); /readyz reports "workflows".
//
// It needs buzz.WithChannels. Every lookup is scoped by the request's or
// connection's community: a workflow id of another community is answered
// exactly like a random one.
package workflowhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/safehttp"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// Feature is the workflow host: mount it with buzz.WithFeature. It mounts
// on one relay.
type Feature struct {
	engine *workflow.Engine
	store  workflow.Store

	// Set by Mount.
	h        buzz.Host
	channels store.ChannelStore
	topics   store.ChannelTopicSetter // nil: set_channel_topic unavailable
	mod      store.ModerationStore    // nil: no bans or timeouts to respect
	workflow workflowMetrics          // the relay's Metrics
	webhooks webhookMetrics           // the relay's Metrics
	mounted  bool

	mu    sync.Mutex
	retry []retryEvent // triggers whose matching failed, oldest first
	wake  chan struct{}
}

type config struct {
	engine []workflow.Option
	caller workflow.WebhookCaller
}

// Option configures a Feature; New validates every option.
type Option func(*config) error

// WithEngineOptions passes opts to the engine (workflow.New): its logger,
// lease, concurrency, poll interval, worker name, minimum schedule
// interval, further actions. The host itself gives the engine its event
// source, publisher, owner rights, topic setter, DM sealer, approval
// links, run observer and webhook caller, and the store's authority
// (workflow.WithAuthority) when the store implements it.
func WithEngineOptions(opts ...workflow.Option) Option {
	return func(c *config) error {
		for _, o := range opts {
			if o == nil {
				return errors.New("workflowhost: WithEngineOptions: nil option")
			}
		}
		c.engine = append(c.engine, opts...)
		return nil
	}
}

// WithWebhookCaller sets what sends call_webhook requests (default: a
// safehttp client with its SSRF guard; see workflow.SafeHTTPWebhooks).
// Every request it sends is counted by the relay's Metrics.
func WithWebhookCaller(c workflow.WebhookCaller) Option {
	return func(cfg *config) error {
		if c == nil {
			return errors.New("workflowhost: WithWebhookCaller: nil caller")
		}
		cfg.caller = c
		return nil
	}
}

// New returns the workflow host of the engine it builds over st, the
// engine's store. The relay's store (buzz.WithStore) keeps the channels
// and events; st is usually the same backend.
func New(st workflow.Store, opts ...Option) (*Feature, error) {
	if st == nil {
		return nil, errors.New("workflowhost: New: nil store")
	}
	var cfg config
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("workflowhost: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.caller == nil {
		client, err := safehttp.New()
		if err != nil {
			return nil, fmt.Errorf("workflowhost: webhook client: %w", err)
		}
		cfg.caller = workflow.SafeHTTPWebhooks(client)
	}
	f := &Feature{store: st, wake: make(chan struct{}, 1)}
	es := (*engineSide)(f)
	var eopts []workflow.Option
	if a, ok := st.(workflow.Authority); ok {
		eopts = append(eopts, workflow.WithAuthority(a))
	}
	eopts = append(eopts, cfg.engine...)
	eopts = append(eopts, workflow.WithTopicSetter(es), workflow.WithDMSealer(es), workflow.WithApprovalLinks(es),
		workflow.WithRunObserver(es), workflow.WithWebhookCaller(countedCaller{next: cfg.caller, f: f}))
	e, err := workflow.New(st, es, es, eopts...)
	if err != nil {
		return nil, fmt.Errorf("workflowhost: %w", err)
	}
	f.engine = e
	return f, nil
}

// Engine is the host's workflow engine. The host runs it (see the package
// documentation); call its other methods as an embedder would (Define,
// SetEnabled, …).
func (f *Feature) Engine() *workflow.Engine { return f.engine }

// Mount implements buzz.Feature. It needs buzz.WithChannels; the workflow
// HTTP API is served only when the relay authenticates HTTP requests
// (buzz.WithHTTPAuth).
func (f *Feature) Mount(h buzz.Host) error {
	if f.mounted {
		return errors.New("workflowhost: the feature is mounted on a relay already")
	}
	cs := h.Channels()
	if cs == nil {
		return errors.New("workflowhost: workflows need channels (buzz.WithChannels)")
	}
	f.h, f.channels, f.mounted = h, cs, true
	f.topics, _ = h.Store().(store.ChannelTopicSetter)
	f.mod, _ = h.Store().(store.ModerationStore)
	f.workflow, _ = h.Metrics().(workflowMetrics)
	f.webhooks, _ = h.Metrics().(webhookMetrics)

	h.AddCommand(nostr.KindDefinition, f.define)
	h.AddCommand(nostr.KindManualTrigger, f.trigger)
	h.AddCommand(nostr.KindApprovalGrant, f.decide)
	h.AddCommand(nostr.KindApprovalDeny, f.decide)
	for k := 46001; k <= 46012; k++ {
		h.AddCommand(k, refuseStatus)
	}
	h.AddOnStored(f.onStored)
	h.AddOnChannelChange(f.onChannelChange)

	h.HandleCommunity("GET "+ApprovalsPath+"/{token}", f.serveApprovalPage)
	h.HandleCommunity("POST "+HooksPath+"/{id}", f.countWebhookIn(f.serveWebhook))
	if h.HTTPAuth() {
		f.registerAPI()
	}

	h.AddReadyCheck("workflows", func(context.Context) error { return f.engine.Check() })
	h.Go(f.run)
	return nil
}

// engineSide is the Feature as its engine sees it: the engine's event
// source, publisher, owner rights, topic setter, DM sealer, approval
// linker and run observer (their methods are not the Feature's API).
type engineSide Feature

var (
	_ workflow.EventSource    = (*engineSide)(nil)
	_ workflow.Publisher      = (*engineSide)(nil)
	_ workflow.OwnerRights    = (*engineSide)(nil)
	_ workflow.TopicSetter    = (*engineSide)(nil)
	_ workflow.DMSealer       = (*engineSide)(nil)
	_ workflow.ApprovalLinker = (*engineSide)(nil)
	_ workflow.RunObserver    = (*engineSide)(nil)
)

// run runs the engine until ctx ends (Relay.Shutdown).
func (f *Feature) run(ctx context.Context) {
	log := f.h.Logger()
	log.Info("workflow engine running", "worker", f.engine.WorkerName())
	if err := f.engine.Run(ctx); err != nil {
		log.Error("workflow engine stopped", "err", err)
	}
}
