package buzz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-05 per community. When the store is a store.NameStore, every
// community host serves
//
//	GET /.well-known/nostr.json?name=<name>
//
// from that community's names only: {"names": {"<name>": "<pubkey>"},
// "relays": {"<pubkey>": ["<this community's relay URL>"]}}, or
// {"names": {}} for a name nobody holds there (and without ?name=), with
// Access-Control-Allow-Origin: *. Names are case-insensitive.
//
// With the HTTP API enabled (WithHTTPAPI), names are claimed and released
// through NIP-98-authenticated calls on the community host:
//
//	POST   /names          {"name": "alice"}: the signer claims the name
//	                       (replacing the one it held); the signer must be
//	                       admitted to the community (not banned; a member
//	                       of a members-only community).
//	                       {"name": "alice", "pubkey": "<hex>"}: the
//	                       community's owner or an admin gives (reserves)
//	                       the name for pubkey, the owner or admin included.
//	DELETE /names/{name}   the holder, the owner or an admin frees the name.
//
// Answers: 200 {"name", "pubkey"}; 409 name_taken when another pubkey holds
// the name (nothing changes); 400 invalid_name; 403 forbidden; 404
// not_found for releasing a name nobody holds.
//
// A profile claims too: a kind 0 whose content's "nip05" is name@host,
// where host is the community's own host, gives name to its author once it
// is stored (replacing the author's previous name), and is refused with
// "restricted: …" when another pubkey holds the name. A kind 0 naming
// another host, or none, changes no name.
const (
	NIP05Path = "/.well-known/nostr.json"
	NamesPath = "/names"
)

// setupNames enables NIP-05 names when the store keeps them.
func (r *Relay) setupNames() {
	if ns, ok := r.cfg.store.(store.NameStore); ok {
		r.names = ns
	}
}

func (r *Relay) registerNIP05() {
	if r.names == nil {
		return
	}
	r.HandleCommunity("GET "+NIP05Path, r.serveNIP05)
	if r.cfg.httpAPI != nil {
		r.HandleCommunity("POST "+NamesPath, r.serveClaimName)
		r.HandleCommunity("DELETE "+NamesPath+"/{name}", r.serveReleaseName)
	}
}

// relayURL is the community's own WebSocket URL.
func (r *Relay) relayURL(req *http.Request, tc tenant.TenantContext) string {
	scheme := r.cfg.relayScheme
	if scheme == "" {
		scheme = "ws"
		if req.TLS != nil {
			scheme = "wss"
		}
	}
	return scheme + "://" + tc.Host()
}

func (r *Relay) serveNIP05(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	type doc struct {
		Names  map[string]string   `json:"names"`
		Relays map[string][]string `json:"relays,omitempty"`
	}
	out := doc{Names: map[string]string{}}
	name := req.URL.Query().Get("name")
	if name != "" {
		pk, err := r.names.NameOwner(req.Context(), tc.Community(), name)
		switch {
		case err == nil:
			out.Names[name] = pk
			out.Relays = map[string][]string{pk: {r.relayURL(req, tc)}}
		case !errors.Is(err, store.ErrNoName):
			r.log.ErrorContext(req.Context(), "buzz: NIP-05 lookup", "err", err)
			apiError(w, http.StatusInternalServerError, "error", msgInternal)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// nameResult is the answer of the name calls.
type nameResult struct {
	Name   string `json:"name"`
	PubKey string `json:"pubkey"`
}

// mayManageNames reports whether pubkey is the community's owner or an
// admin.
func (r *Relay) mayManageNames(ctx context.Context, c tenant.CommunityID, pubkey string) (bool, error) {
	if r.channels == nil {
		return false, nil
	}
	role, ok, err := r.channels.store.CommunityRole(ctx, c, pubkey)
	if err != nil || !ok {
		return false, err
	}
	return role == channel.RoleOwner || role == channel.RoleAdmin, nil
}

func (r *Relay) serveClaimName(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	signer, body, ok := r.authenticate(w, req, tc)
	if !ok {
		return
	}
	ctx := audit.WithActor(req.Context(), signer)
	var in struct {
		Name   string `json:"name"`
		PubKey string `json:"pubkey"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "invalid: the body must be {\"name\": …, \"pubkey\"?: …}")
		return
	}
	name, valid := store.NormalizeName(in.Name)
	if !valid {
		apiError(w, http.StatusBadRequest, "invalid_name", "invalid: a name is 1-64 characters of a-z 0-9 - _ .")
		return
	}
	holder := signer
	if in.PubKey != "" && in.PubKey != signer {
		if !nostr.IsLowerHex(in.PubKey, 64) {
			apiError(w, http.StatusBadRequest, "invalid", "invalid: pubkey must be 64 lowercase hex characters")
			return
		}
		may, err := r.mayManageNames(ctx, tc.Community(), signer)
		if err != nil {
			r.internalError(w, req, "name role", err)
			return
		}
		if !may {
			apiError(w, http.StatusForbidden, "forbidden", "restricted: only the community's owner and admins give names to others")
			return
		}
		holder = in.PubKey
	} else {
		reason, err := r.bannedReaders(ctx, tc.Community(), []string{signer})
		if err == nil && reason == "" {
			reason, _, err = r.membersOnlyRefusal(ctx, tc.Community(), []string{signer})
		}
		if err != nil {
			r.internalError(w, req, "name admission", err)
			return
		}
		if reason != "" {
			apiError(w, http.StatusForbidden, "forbidden", reason)
			return
		}
	}
	switch err := r.names.SetName(ctx, tc.Community(), holder, name); {
	case errors.Is(err, store.ErrNameTaken):
		apiError(w, http.StatusConflict, "name_taken", "restricted: the name is held by another user")
	case err != nil:
		r.internalError(w, req, "claim name", err)
	default:
		writeJSON(w, http.StatusOK, nameResult{Name: name, PubKey: holder})
	}
}

func (r *Relay) serveReleaseName(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	signer, _, ok := r.authenticate(w, req, tc)
	if !ok {
		return
	}
	ctx := audit.WithActor(req.Context(), signer)
	name, valid := store.NormalizeName(req.PathValue("name"))
	if !valid {
		apiError(w, http.StatusBadRequest, "invalid_name", "invalid: a name is 1-64 characters of a-z 0-9 - _ .")
		return
	}
	holder, err := r.names.NameOwner(ctx, tc.Community(), name)
	switch {
	case errors.Is(err, store.ErrNoName):
		apiError(w, http.StatusNotFound, "not_found", "invalid: nobody holds this name")
		return
	case err != nil:
		r.internalError(w, req, "name owner", err)
		return
	}
	// Only the holder's own name is released on its behalf (so a name that
	// changed hands meanwhile is not), any name on an owner's or admin's.
	only := signer
	if holder != signer {
		may, err := r.mayManageNames(ctx, tc.Community(), signer)
		if err != nil {
			r.internalError(w, req, "name role", err)
			return
		}
		if !may {
			apiError(w, http.StatusForbidden, "forbidden", "restricted: only the holder, the community's owner and admins release a name")
			return
		}
		only = ""
	}
	released, err := r.names.ReleaseName(ctx, tc.Community(), name, only)
	switch {
	case errors.Is(err, store.ErrNoName):
		apiError(w, http.StatusNotFound, "not_found", "invalid: nobody holds this name")
	case err != nil:
		r.internalError(w, req, "release name", err)
	default:
		writeJSON(w, http.StatusOK, nameResult{Name: name, PubKey: released})
	}
}

// internalError logs err and answers 500 without details.
func (r *Relay) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	r.log.ErrorContext(req.Context(), "buzz: "+what, "err", err)
	apiError(w, http.StatusInternalServerError, "error", msgInternal)
}

// profileName returns the name a kind 0 event claims in tc's community:
// the local part of its "nip05" when the domain is tc's host.
func profileName(tc tenant.TenantContext, ev *nostr.Event) (string, bool) {
	if ev.Kind != nostr.KindProfile {
		return "", false
	}
	var meta struct {
		NIP05 string `json:"nip05"`
	}
	if json.Unmarshal([]byte(ev.Content), &meta) != nil {
		return "", false
	}
	local, domain, ok := strings.Cut(meta.NIP05, "@")
	if !ok {
		return "", false
	}
	host, err := tenant.NormalizeHost(domain)
	if err != nil || host != tc.Host() {
		return "", false
	}
	return store.NormalizeName(local)
}

// profileNamePolicy refuses a kind 0 claiming a name of this community
// that another pubkey holds.
func (r *Relay) profileNamePolicy(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) error {
	name, ok := profileName(tc, ev)
	if !ok {
		return nil
	}
	holder, err := r.names.NameOwner(ctx, tc.Community(), name)
	switch {
	case errors.Is(err, store.ErrNoName):
		return nil
	case err != nil:
		r.log.ErrorContext(ctx, "buzz: NIP-05 name of a profile", "err", err)
		return errors.New(msgInternal)
	case holder != ev.PubKey:
		return errors.New("restricted: the nip05 name " + name + "@" + tc.Host() + " is held by another user")
	}
	return nil
}

// profileNameStored gives a stored kind 0's name to its author.
func (r *Relay) profileNameStored(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) {
	name, ok := profileName(tc, ev)
	if !ok {
		return
	}
	if err := r.names.SetName(audit.WithActor(ctx, ev.PubKey), tc.Community(), ev.PubKey, name); err != nil {
		// Taken between the policy and now (a race lost): the profile is
		// stored, the name stays with the winner.
		r.log.WarnContext(ctx, "buzz: NIP-05 name of a stored profile", "err", err)
	}
}
