// Command workflows embeds buzz with its workflow engine and one custom
// action. It serves ws://localhost:3000 on the embedded store in
// ./buzz-data; a channel member can then publish a kind 30620 definition
// such as
//
//	name: Shout
//	trigger: {on: message_posted, filter: 'starts_with(trigger_text, "!shout ")'}
//	steps:
//	  - id: loud
//	    action: shout            # the custom action below
//	    text: "{{trigger.text}}"
//	  - id: reply
//	    action: send_message
//	    text: "{{steps.loud.output.text}}"
//
// and every "!shout …" message in that channel is answered in capitals.
//
// Like every example, it imports public packages only (no internal
// package), as an embedder would.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflowhost"
)

// shout is a custom action: it upper-cases its text field. An action
// validates its fields when a definition is published (errors name the
// field) and returns JSON output later steps read as
// {{steps.ID.output.F}}. It has no external effect, so it needs no
// StepContext.Once.
type shout struct{}

func (shout) Name() string { return "shout" }

func (shout) Validate(f workflow.Fields, _ *workflow.Definition) error {
	if err := f.Only("text"); err != nil {
		return err
	}
	_, err := f.String("text", true)
	return err
}

func (shout) Run(_ context.Context, x *workflow.StepContext) (map[string]any, error) {
	text, err := x.String("text")
	if err != nil {
		return nil, err
	}
	return map[string]any{"text": strings.ToUpper(strings.TrimPrefix(text, "!shout "))}, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "localhost:3000")
	if err != nil {
		log.Fatal(err)
	}
	log.Print("relay with workflows listening on ws://localhost:3000")
	if err := run(ctx, ln, "./buzz-data"); err != nil {
		log.Fatal(err)
	}
}

// run serves a relay with workflows on ln until ctx ends.
func run(ctx context.Context, ln net.Listener, dataDir string) error {
	st, err := embedded.Open(ctx, dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	host, err := tenant.NormalizeHost(ln.Addr().String()) // 127.0.0.1 folds to localhost
	if err != nil {
		return err
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		return err
	}
	// The workflow host wires the engine to the relay (set_channel_topic,
	// send_dm, approval links, owner rights) and runs it until Shutdown;
	// call_webhook goes through a safehttp client hardened against SSRF.
	wf, err := workflowhost.New(st, workflowhost.WithEngineOptions(workflow.WithAction(shout{})))
	if err != nil {
		return err
	}
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(),
		buzz.WithFeature(wf))
	if err != nil {
		return err
	}

	srv := &http.Server{Handler: relay}
	go func() {
		<-ctx.Done()
		_ = relay.Shutdown(context.WithoutCancel(ctx))
		_ = srv.Close()
	}()
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
