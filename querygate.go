package buzz

import (
	"context"
	"sync"

	"github.com/buzzrelay/buzz/tenant"
)

// queryGate admits store reads so that no community, and no connection,
// can take every slot. At most slots reads run at once relay-wide (the
// store's read concurrency), and at most perCommunity of them for one
// community. When reads wait, a freed slot goes to the next community in
// turn that has waiting reads and room in its budget, and within it to the
// next connection in turn, and within that to its oldest read: a burst from
// one community or one connection waits behind its own reads, not in front
// of everyone else's. A queryGate is safe for concurrent use.
type queryGate struct {
	mu           sync.Mutex
	slots        int // reads admitted at once relay-wide
	free         int
	perCommunity int
	comms        map[tenant.CommunityID]*gateCommunity
	ring         []*gateCommunity // communities with waiting reads, in turn order
	next         int              // index in ring of the next community served
}

type gateCommunity struct {
	id    tenant.CommunityID
	held  int
	conns map[any]*gateConn
	ring  []*gateConn // connections with waiting reads, in turn order
	next  int
}

type gateConn struct {
	owner   any
	waiters []*gateWaiter // oldest first
}

type gateWaiter struct {
	ready   chan struct{} // closed when the slot is granted
	granted bool          // guarded by queryGate.mu
}

func newQueryGate(slots, perCommunity int) *queryGate {
	return &queryGate{
		slots:        slots,
		free:         slots,
		perCommunity: max(1, min(perCommunity, slots)),
		comms:        make(map[tenant.CommunityID]*gateCommunity),
	}
}

// acquire waits for a slot for a read of community c on behalf of owner
// (a connection), or for ctx to end. A nil error means the caller holds a
// slot and must release it.
func (g *queryGate) acquire(ctx context.Context, c tenant.CommunityID, owner any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	gc := g.comms[c]
	if gc == nil {
		gc = &gateCommunity{id: c, conns: make(map[any]*gateConn)}
		g.comms[c] = gc
	}
	if g.free > 0 && gc.held < g.perCommunity && len(gc.ring) == 0 {
		g.free--
		gc.held++
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ready: make(chan struct{})}
	gn := gc.conns[owner]
	if gn == nil {
		gn = &gateConn{owner: owner}
		gc.conns[owner] = gn
	}
	if len(gn.waiters) == 0 {
		gc.ring = append(gc.ring, gn)
		if len(gc.ring) == 1 {
			g.ring = append(g.ring, gc)
		}
	}
	gn.waiters = append(gn.waiters, w)
	g.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted {
		g.mu.Unlock()
		g.release(c)
		return ctx.Err()
	}
	gn.waiters = deleteFirst(gn.waiters, w)
	if len(gn.waiters) == 0 {
		g.dropConn(gc, gn)
	}
	g.forgetIfIdle(gc)
	g.mu.Unlock()
	return ctx.Err()
}

// release returns a slot of community c and grants it, or another, in turn.
func (g *queryGate) release(c tenant.CommunityID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gc := g.comms[c]
	gc.held--
	g.free++
	g.dispatch()
	g.forgetIfIdle(gc)
}

// dispatch grants free slots to waiting reads in turn. g.mu held.
func (g *queryGate) dispatch() {
	for g.free > 0 && len(g.ring) > 0 {
		granted := false
		for range len(g.ring) {
			if g.next >= len(g.ring) {
				g.next = 0
			}
			gc := g.ring[g.next]
			if gc.held >= g.perCommunity {
				g.next++
				continue
			}
			if gc.next >= len(gc.ring) {
				gc.next = 0
			}
			gn := gc.ring[gc.next]
			w := gn.waiters[0]
			gn.waiters = gn.waiters[1:]
			w.granted = true
			close(w.ready)
			g.free--
			gc.held++
			gc.next++
			if len(gn.waiters) == 0 {
				g.dropConn(gc, gn) // may drop gc from g.ring, at g.next
			} else {
				g.next++
			}
			granted = true
			break
		}
		if !granted {
			return // every waiting community is at its budget
		}
	}
}

// dropConn takes gn, which has no waiting read left, out of gc's turn, and
// gc out of the gate's turn when none of its connections waits. g.mu held.
func (g *queryGate) dropConn(gc *gateCommunity, gn *gateConn) {
	delete(gc.conns, gn.owner)
	i := indexOf(gc.ring, gn)
	gc.ring = append(gc.ring[:i], gc.ring[i+1:]...)
	if i < gc.next {
		gc.next--
	}
	if len(gc.ring) > 0 {
		return
	}
	j := indexOf(g.ring, gc)
	g.ring = append(g.ring[:j], g.ring[j+1:]...)
	if j < g.next {
		g.next--
	}
}

// forgetIfIdle forgets gc once it holds no slot and waits for none, so an
// idle community costs nothing. g.mu held.
func (g *queryGate) forgetIfIdle(gc *gateCommunity) {
	if gc.held == 0 && len(gc.ring) == 0 && g.comms[gc.id] == gc {
		delete(g.comms, gc.id)
	}
}

func indexOf[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func deleteFirst[T comparable](s []T, v T) []T {
	if i := indexOf(s, v); i >= 0 {
		return append(s[:i], s[i+1:]...)
	}
	return s
}
