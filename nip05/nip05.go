// Package nip05 serves NIP-05 names per community, as a feature mounted on
// a relay (buzz.WithFeature(nip05.New())). The relay's store must keep
// names (store.NameStore; both store/embedded and store/postgres do).
//
// Every community host serves
//
//	GET /.well-known/nostr.json?name=<name>
//
// from that community's names only: {"names": {"<name>": "<pubkey>"},
// "relays": {"<pubkey>": ["<this community's relay URL>"]}}, or
// {"names": {}} for a name nobody holds there (and without ?name=), with
// Access-Control-Allow-Origin: *. Names are case-insensitive.
//
// When the relay authenticates HTTP requests (buzz.WithHTTPAuth), names are
// claimed and released through NIP-98-authenticated calls on the community
// host:
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
package nip05

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Routes of the feature on every community host.
const (
	Path      = "/.well-known/nostr.json"
	NamesPath = "/names"
)

// Feature is NIP-05 names mounted on a relay. Create it with New.
type Feature struct {
	h     buzz.Host
	names store.NameStore
}

// New returns the NIP-05 feature, to mount with buzz.WithFeature.
func New() *Feature { return &Feature{} }

// Mount implements buzz.Feature: it needs a store that keeps names.
func (f *Feature) Mount(h buzz.Host) error {
	ns, ok := h.Store().(store.NameStore)
	if !ok {
		return errors.New("nip05: the relay's store keeps no names (store.NameStore)")
	}
	f.h, f.names = h, ns
	h.Advertise(nip11.NIP{Number: 5, Title: "DNS-based names (/.well-known/nostr.json)"})
	h.HandleCommunity("GET "+Path, f.serveLookup)
	if h.HTTPAuth() {
		h.HandleCommunity("POST "+NamesPath, f.serveClaim)
		h.HandleCommunity("DELETE "+NamesPath+"/{name}", f.serveRelease)
	}
	h.AddEventPolicy(f.profilePolicy)
	h.AddOnStored(f.profileStored)
	return nil
}

func (f *Feature) serveLookup(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	type doc struct {
		Names  map[string]string   `json:"names"`
		Relays map[string][]string `json:"relays,omitempty"`
	}
	out := doc{Names: map[string]string{}}
	name := req.URL.Query().Get("name")
	if name != "" {
		pk, err := f.names.NameOwner(req.Context(), tc.Community(), name)
		switch {
		case err == nil:
			out.Names[name] = pk
			out.Relays = map[string][]string{pk: {f.h.RelayURL(req, tc)}}
		case !errors.Is(err, store.ErrNoName):
			f.internalError(w, req, "NIP-05 lookup", err)
			return
		}
	}
	apijson.Write(w, http.StatusOK, out)
}

// result is the answer of the name calls.
type result struct {
	Name   string `json:"name"`
	PubKey string `json:"pubkey"`
}

// mayManage reports whether pubkey is the community's owner or an admin.
func (f *Feature) mayManage(ctx context.Context, tc tenant.TenantContext, pubkey string) (bool, error) {
	role, ok, err := f.h.CommunityRole(ctx, tc, pubkey)
	if err != nil || !ok {
		return false, err
	}
	return role == channel.RoleOwner || role == channel.RoleAdmin, nil
}

func (f *Feature) serveClaim(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := f.h.AuthenticateHTTP(w, req, tc, apitoken.UsersWrite)
	if !ok {
		return
	}
	signer, body := caller.PubKey, caller.Body
	ctx := audit.WithActor(req.Context(), signer)
	var in struct {
		Name   string `json:"name"`
		PubKey string `json:"pubkey"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		apijson.Error(w, http.StatusBadRequest, "invalid", "invalid: the body must be {\"name\": …, \"pubkey\"?: …}")
		return
	}
	name, valid := store.NormalizeName(in.Name)
	if !valid {
		apijson.Error(w, http.StatusBadRequest, "invalid_name", "invalid: a name is 1-64 characters of a-z 0-9 - _ .")
		return
	}
	holder := signer
	if in.PubKey != "" && in.PubKey != signer {
		if !nostr.IsLowerHex(in.PubKey, 64) {
			apijson.Error(w, http.StatusBadRequest, "invalid", "invalid: pubkey must be 64 lowercase hex characters")
			return
		}
		may, err := f.mayManage(ctx, tc, signer)
		if err != nil {
			f.internalError(w, req, "name role", err)
			return
		}
		if !may {
			apijson.Error(w, http.StatusForbidden, "forbidden", "restricted: only the community's owner and admins give names to others")
			return
		}
		holder = in.PubKey
	} else {
		reason, err := f.h.Admitted(ctx, tc, signer)
		if err != nil {
			f.internalError(w, req, "name admission", err)
			return
		}
		if reason != "" {
			apijson.Error(w, http.StatusForbidden, "forbidden", reason)
			return
		}
	}
	switch err := f.names.SetName(ctx, tc.Community(), holder, name); {
	case errors.Is(err, store.ErrNameTaken):
		apijson.Error(w, http.StatusConflict, "name_taken", "restricted: the name is held by another user")
	case err != nil:
		f.internalError(w, req, "claim name", err)
	default:
		apijson.Write(w, http.StatusOK, result{Name: name, PubKey: holder})
	}
}

func (f *Feature) serveRelease(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := f.h.AuthenticateHTTP(w, req, tc, apitoken.UsersWrite)
	if !ok {
		return
	}
	signer := caller.PubKey
	ctx := audit.WithActor(req.Context(), signer)
	name, valid := store.NormalizeName(req.PathValue("name"))
	if !valid {
		apijson.Error(w, http.StatusBadRequest, "invalid_name", "invalid: a name is 1-64 characters of a-z 0-9 - _ .")
		return
	}
	holder, err := f.names.NameOwner(ctx, tc.Community(), name)
	switch {
	case errors.Is(err, store.ErrNoName):
		apijson.Error(w, http.StatusNotFound, "not_found", "invalid: nobody holds this name")
		return
	case err != nil:
		f.internalError(w, req, "name owner", err)
		return
	}
	// Only the holder's own name is released on its behalf (so a name that
	// changed hands meanwhile is not), any name on an owner's or admin's.
	only := signer
	if holder != signer {
		may, err := f.mayManage(ctx, tc, signer)
		if err != nil {
			f.internalError(w, req, "name role", err)
			return
		}
		if !may {
			apijson.Error(w, http.StatusForbidden, "forbidden", "restricted: only the holder, the community's owner and admins release a name")
			return
		}
		only = ""
	}
	released, err := f.names.ReleaseName(ctx, tc.Community(), name, only)
	switch {
	case errors.Is(err, store.ErrNoName):
		apijson.Error(w, http.StatusNotFound, "not_found", "invalid: nobody holds this name")
	case err != nil:
		f.internalError(w, req, "release name", err)
	default:
		apijson.Write(w, http.StatusOK, result{Name: name, PubKey: released})
	}
}

// internalError logs err and answers 500 without details.
func (f *Feature) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	f.h.Logger().ErrorContext(req.Context(), "nip05: "+what, "err", err)
	apijson.Error(w, http.StatusInternalServerError, "error", apijson.MsgInternal)
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

// profilePolicy refuses a kind 0 claiming a name of this community that
// another pubkey holds.
func (f *Feature) profilePolicy(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) error {
	name, ok := profileName(tc, ev)
	if !ok {
		return nil
	}
	holder, err := f.names.NameOwner(ctx, tc.Community(), name)
	switch {
	case errors.Is(err, store.ErrNoName):
		return nil
	case err != nil:
		f.h.Logger().ErrorContext(ctx, "nip05: the name of a profile", "err", err)
		return errors.New(apijson.MsgInternal)
	case holder != ev.PubKey:
		return errors.New("restricted: the nip05 name " + name + "@" + tc.Host() + " is held by another user")
	}
	return nil
}

// profileStored gives a stored kind 0's name to its author.
func (f *Feature) profileStored(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) {
	name, ok := profileName(tc, ev)
	if !ok {
		return
	}
	if err := f.names.SetName(audit.WithActor(ctx, ev.PubKey), tc.Community(), ev.PubKey, name); err != nil {
		// Taken between the policy and now (a race lost): the profile is
		// stored, the name stays with the winner.
		f.h.Logger().WarnContext(ctx, "nip05: the name of a stored profile", "err", err)
	}
}
