package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// Built-in action names.
const (
	ActionSendMessage     = "send_message"
	ActionAddReaction     = "add_reaction"
	ActionSetChannelTopic = "set_channel_topic"
	ActionSendDM          = "send_dm"
	ActionCallWebhook     = "call_webhook"
	ActionDelay           = "delay"
	ActionRequestApproval = "request_approval"
)

const maxMessageBytes = 64 << 10

func builtinActions(cfg *config) []Action {
	as := []Action{sendMessage{}, addReaction{}, delay{max: cfg.maxDelay}}
	if cfg.approvals != nil {
		as = append(as, requestApproval{st: cfg.approvals, links: cfg.links, dms: cfg.dms, max: cfg.maxDelay})
	} else {
		as = append(as, unavailable{ActionRequestApproval, "request_approval needs a store that keeps approvals"})
	}
	if cfg.topics != nil {
		as = append(as, setTopic{cfg.topics})
	} else {
		as = append(as, unavailable{ActionSetChannelTopic, "set_channel_topic is not available on this relay"})
	}
	if cfg.dms != nil {
		as = append(as, sendDM{cfg.dms})
	} else {
		as = append(as, unavailable{ActionSendDM, "send_dm is not available on this relay"})
	}
	if cfg.webhooks != nil {
		as = append(as, callWebhook{cfg.webhooks})
	} else {
		as = append(as, unavailable{ActionCallWebhook, "call_webhook is not available on this relay"})
	}
	return as
}

// unavailable refuses a known action the engine was not configured for,
// at definition time (never a silent no-op).
type unavailable struct{ name, msg string }

func (u unavailable) Name() string { return u.name }
func (u unavailable) Validate(Fields, *Definition) error {
	return fieldErr("action", "%s", u.msg)
}
func (u unavailable) Run(context.Context, *StepContext) (map[string]any, error) {
	return nil, Fail(CodeInvalidDefinition, "%s", u.msg)
}

// publishOnce signs ev, records it as the effect's intent and publishes it;
// a takeover publishes the recorded event again (deduplicated by id).
func publishOnce(ctx context.Context, x *StepContext, key string, ev *nostr.Event) (string, error) {
	ev.Tags = append(ev.Tags, nostr.Tag{ProvenanceTag, x.Workflow.ID.String(), x.Run.ID.String(), x.Step.ID})
	if err := x.e.pub.Sign(ctx, x.Community, ev); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	res, err := x.Once(ctx, key, ev.AppendJSON(nil), true, func(ctx context.Context, intent []byte) ([]byte, error) {
		rec, err := nostr.ParseEvent(intent)
		if err != nil {
			return nil, fmt.Errorf("recorded event: %w", err)
		}
		if err := x.e.emit(ctx, x.Community, rec); err != nil {
			return nil, err
		}
		return []byte(rec.ID), nil
	})
	if err != nil {
		return "", err
	}
	return string(res), nil
}

// sendMessage: relay-signed kind 9 in the workflow's channel or another
// channel of the community (the owner must be a member of it).
type sendMessage struct{}

// NeededRight implements RightNeeder.
func (sendMessage) NeededRight() Right { return RightPost }

func (sendMessage) Name() string { return ActionSendMessage }

func (sendMessage) Validate(f Fields, d *Definition) error {
	if err := f.Only("text", "channel", "reply_in_thread"); err != nil {
		return err
	}
	text, err := f.String("text", true)
	if err != nil {
		return err
	}
	if len(text) > maxMessageBytes {
		return fieldErr("text", "must be at most %d bytes", maxMessageBytes)
	}
	if ch, err := f.String("channel", false); err != nil {
		return err
	} else if ch != "" && !strings.Contains(ch, "{{") {
		if _, ok := channel.ParseID(ch); !ok {
			return fieldErr("channel", "must be a channel's group id (a-z0-9-_, up to 128 characters, or a UUID)")
		}
	}
	reply, err := f.Bool("reply_in_thread")
	if err != nil {
		return err
	}
	if reply && d.Trigger.On != TriggerMessagePosted && d.Trigger.On != TriggerReactionAdded {
		return fieldErr("reply_in_thread", "needs a message_posted or reaction_added trigger")
	}
	return nil
}

func (sendMessage) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	text, _ := x.String("text")
	ch := x.Workflow.Channel
	if s, _ := x.String("channel"); s != "" {
		id, ok := channel.ParseID(s)
		if !ok {
			return nil, Fail("invalid_channel", "channel %q is not a channel UUID", s)
		}
		if id != ch {
			// The owner must be able to post there too.
			if err := x.e.ownerMay(ctx, x.Community, id, x.Workflow.Owner, RightPost); err != nil {
				return nil, err
			}
		}
		ch = id
	}
	if len(text) > maxMessageBytes {
		text = truncateRunes(text[:maxMessageBytes-4], maxMessageBytes)
	}
	ev := &nostr.Event{CreatedAt: x.Now().Unix(), Kind: nostr.KindChatMessage, Content: text,
		Tags: nostr.Tags{{"h", ch.String()}}}
	if reply, _ := x.Step.Fields.Bool("reply_in_thread"); reply {
		msg, _ := x.Run.Trigger["message_id"].(string)
		root, _ := x.Run.Trigger["root_message_id"].(string)
		if root == "" {
			root = msg
		}
		if root != "" {
			ev.Tags = append(ev.Tags, nostr.Tag{"e", root, "", "root"})
			if msg != "" && msg != root {
				ev.Tags = append(ev.Tags, nostr.Tag{"e", msg, "", "reply"})
			}
		}
	}
	id, err := publishOnce(ctx, x, "message", ev)
	if err != nil {
		return nil, err
	}
	return map[string]any{"sent": true, "event_id": id}, nil
}

// addReaction: relay-signed kind 7 on the triggering message.
type addReaction struct{}

// NeededRight implements RightNeeder.
func (addReaction) NeededRight() Right { return RightPost }

func (addReaction) Name() string { return ActionAddReaction }

func (addReaction) Validate(f Fields, d *Definition) error {
	if err := f.Only("emoji"); err != nil {
		return err
	}
	e, err := f.String("emoji", true)
	if err != nil {
		return err
	}
	if utf8.RuneCountInString(e) > 64 {
		return fieldErr("emoji", "must be at most 64 characters")
	}
	if d.Trigger.On != TriggerMessagePosted && d.Trigger.On != TriggerReactionAdded {
		return fieldErr("action", "add_reaction needs a message_posted or reaction_added trigger")
	}
	return nil
}

func (addReaction) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	emoji, _ := x.String("emoji")
	msg, _ := x.Run.Trigger["message_id"].(string)
	author, _ := x.Run.Trigger["author"].(string)
	if msg == "" {
		return nil, Fail("no_message", "the trigger has no message to react to")
	}
	tags := nostr.Tags{{"h", x.Workflow.Channel.String()}, {"e", msg}}
	if author != "" && x.Run.Trigger["kind"] == float64(nostr.KindChatMessage) {
		tags = append(tags, nostr.Tag{"p", author})
	}
	ev := &nostr.Event{CreatedAt: x.Now().Unix(), Kind: 7, Content: emoji, Tags: tags}
	id, err := publishOnce(ctx, x, "reaction", ev)
	if err != nil {
		return nil, err
	}
	return map[string]any{"sent": true, "event_id": id}, nil
}

// setTopic: changes the channel's topic through the TopicSetter.
type setTopic struct{ t TopicSetter }

// NeededRight implements RightNeeder.
func (setTopic) NeededRight() Right { return RightMetadata }

func (setTopic) Name() string { return ActionSetChannelTopic }

func (setTopic) Validate(f Fields, _ *Definition) error {
	if err := f.Only("topic"); err != nil {
		return err
	}
	t, err := f.String("topic", false)
	if err != nil {
		return err
	}
	if len(t) > 4096 {
		return fieldErr("topic", "must be at most 4096 bytes")
	}
	return nil
}

func (s setTopic) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	topic, _ := x.String("topic")
	topic = truncateRunes(topic, 4096)
	// Setting a topic twice is harmless: replay-safe.
	_, err := x.Once(ctx, "topic", []byte(topic), true, func(ctx context.Context, intent []byte) ([]byte, error) {
		return nil, s.t.SetChannelTopic(ctx, x.Community, x.Workflow.Channel, string(intent))
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"topic": topic}, nil
}

// sendDM: NIP-17 private message; the sealed events are recorded before
// they are published.
type sendDM struct{ s DMSealer }

// NeededRight implements RightNeeder.
func (sendDM) NeededRight() Right { return RightDM }

func (sendDM) Name() string { return ActionSendDM }

func (sendDM) Validate(f Fields, _ *Definition) error {
	if err := f.Only("to", "text"); err != nil {
		return err
	}
	to, err := f.String("to", true)
	if err != nil {
		return err
	}
	if !strings.Contains(to, "{{") && !nostr.IsLowerHex(to, 64) {
		return fieldErr("to", "must be a 64-character lowercase hex public key or a template")
	}
	text, err := f.String("text", true)
	if err != nil {
		return err
	}
	if len(text) > maxMessageBytes {
		return fieldErr("text", "must be at most %d bytes", maxMessageBytes)
	}
	return nil
}

func (d sendDM) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	to, _ := x.String("to")
	text, _ := x.String("text")
	if !nostr.IsLowerHex(to, 64) {
		return nil, Fail("invalid_recipient", "recipient %q is not a 64-character hex public key", to)
	}
	// Sealing draws random keys: seal once, record the wraps, publish
	// the recorded ones (a takeover republishes the same events).
	res, err := x.Once(ctx, "dm", nil, true, func(ctx context.Context, intent []byte) ([]byte, error) {
		var raws []json.RawMessage
		if len(intent) > 0 {
			if err := json.Unmarshal(intent, &raws); err != nil {
				return nil, err
			}
		}
		var evs []*nostr.Event
		if raws == nil {
			sealed, err := d.s.SealDM(ctx, x.Community, to, text)
			if err != nil {
				return nil, err
			}
			evs = sealed
		} else {
			for _, r := range raws {
				ev, err := nostr.ParseEvent(r)
				if err != nil {
					return nil, err
				}
				evs = append(evs, ev)
			}
		}
		ids := make([]string, 0, len(evs))
		for _, ev := range evs {
			if err := x.e.emit(ctx, x.Community, ev); err != nil {
				return nil, err
			}
			ids = append(ids, ev.ID)
		}
		return json.Marshal(ids)
	})
	if err != nil {
		return nil, err
	}
	var ids []string
	_ = json.Unmarshal(res, &ids)
	out := map[string]any{"sent": true}
	if len(ids) > 0 {
		out["event_id"] = ids[0]
	}
	return out, nil
}

// callWebhook: an HTTP request through the WebhookCaller, at most once.
type callWebhook struct{ c WebhookCaller }

// NeededRight implements RightNeeder.
func (callWebhook) NeededRight() Right { return RightAdmin }

func (callWebhook) Name() string { return ActionCallWebhook }

func (callWebhook) Validate(f Fields, _ *Definition) error {
	if err := f.Only("url", "method", "headers", "body"); err != nil {
		return err
	}
	u, err := f.String("url", true)
	if err != nil {
		return err
	}
	if !strings.Contains(u, "{{") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return fieldErr("url", "must be an http(s) URL")
	}
	m, err := f.String("method", false)
	if err != nil {
		return err
	}
	switch strings.ToUpper(m) {
	case "", "GET", "POST", "PUT", "PATCH", "DELETE":
	default:
		return fieldErr("method", "must be GET, POST, PUT, PATCH or DELETE")
	}
	h, err := f.Map("headers", false)
	if err != nil {
		return err
	}
	for k := range h {
		if _, err := h.String(k, false); err != nil {
			return prefixed("headers", err)
		}
	}
	if _, ok := f["body"]; ok {
		if _, isStr := f["body"].(string); !isStr {
			if _, isMap := f["body"].(map[string]any); !isMap {
				return fieldErr("body", "must be a string or a mapping")
			}
		}
	}
	return nil
}

type webhookIntent struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body"`
}

func (w callWebhook) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	req := webhookIntent{Method: "POST"}
	req.URL, _ = x.String("url")
	if m, _ := x.String("method"); m != "" {
		req.Method = strings.ToUpper(m)
	}
	if h, _ := x.Step.Fields.Map("headers", false); len(h) > 0 {
		req.Headers = make(map[string]string, len(h))
		for k := range h {
			v, _ := h.String(k, false)
			req.Headers[k] = x.Expand(v)
		}
	}
	switch b := x.Step.Fields["body"].(type) {
	case string:
		req.Body = x.Expand(b)
	case map[string]any:
		req.Body = toJSON(expandValues(b, x.vars))
	}
	intent, _ := json.Marshal(req)
	res, err := x.Once(ctx, "call", intent, false, func(ctx context.Context, _ []byte) ([]byte, error) {
		resp, err := w.c.Call(ctx, WebhookRequest{URL: req.URL, Method: req.Method, Headers: req.Headers,
			Body: []byte(req.Body), IdempotencyKey: x.IdempotencyKey()})
		if err != nil {
			return nil, Fail("webhook_failed", "%v", err)
		}
		return json.Marshal(map[string]any{"status": resp.Status, "body": string(resp.Body)})
	})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// expandValues expands the templates in every string of a JSON value.
func expandValues(v any, vars map[string]any) any {
	switch t := v.(type) {
	case string:
		return Expand(t, vars)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = expandValues(x, vars)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = expandValues(x, vars)
		}
		return out
	}
	return v
}

// delay parks the run (durably) for a duration.
type delay struct{ max time.Duration }

func (delay) Name() string { return ActionDelay }

// ParseDuration parses a delay: Go-style h/m/s suffixes ("90s", "1h30m")
// or plain seconds ("45").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 1<<40 {
			return 0, fmt.Errorf("duration out of range")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || strings.ContainsAny(s, "nµu") || strings.Contains(s, "ms") {
		return 0, fmt.Errorf("must be a duration such as 30s, 5m, 1h30m or a number of seconds")
	}
	return d, nil
}

func durationField(f Fields) (time.Duration, error) {
	v, ok := f["duration"]
	if !ok || v == nil {
		return 0, fieldErr("duration", "is required")
	}
	var s string
	switch t := v.(type) {
	case string:
		s = t
	case float64:
		s = strconv.FormatFloat(t, 'f', -1, 64)
	default:
		return 0, fieldErr("duration", "must be a duration such as 30s, 5m or a number of seconds")
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fieldErr("duration", "%v", err)
	}
	return d, nil
}

func (a delay) Validate(f Fields, _ *Definition) error {
	if err := f.Only("duration"); err != nil {
		return err
	}
	d, err := durationField(f)
	if err != nil {
		return err
	}
	if d <= 0 || d > a.max {
		return fieldErr("duration", "must be between 1s and %v", a.max)
	}
	return nil
}

func (a delay) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	d, err := durationField(x.Step.Fields)
	if err != nil {
		return nil, err
	}
	// The resume time is recorded once, so a run taken over resumes at
	// the original time rather than starting the delay again.
	want := []byte(strconv.FormatInt(x.Now().Add(d).UnixMilli(), 10))
	res, err := x.Once(ctx, "resume_at", want, true, func(_ context.Context, intent []byte) ([]byte, error) {
		return intent, nil
	})
	if err != nil {
		return nil, err
	}
	ms, err := strconv.ParseInt(string(res), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("recorded resume time: %w", err)
	}
	until := time.UnixMilli(ms)
	if x.Now().Before(until) {
		return nil, x.ParkUntil(until)
	}
	return map[string]any{"waited_secs": d.Seconds()}, nil
}
