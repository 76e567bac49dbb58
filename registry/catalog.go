package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// PackageNodeType is the node type of a package node: Source/{plugin} on the
// mesh, whose content is a PackageContent.
const PackageNodeType = "Package"

// DefaultCatalogRetry is how long the package catalog waits before it
// restarts its live query after the query failed.
const DefaultCatalogRetry = 5 * time.Second

// PackageContent is the content of a package node: the plan tier a caller's
// plan must cover to receive the package. An empty tier is the baseline.
type PackageContent struct {
	Tier string `json:"tier"`
}

// errCatalogClosed ends the reads of a catalog whose server has closed.
var errCatalogClosed = errors.New("registry: the package catalog is closed")

// catalogPackage is what the catalog knows of one package.
type catalogPackage struct {
	name       string // the package's spelling: its node's name (or id)
	path       string // its node's path
	tier       string
	unreadable bool     // content that is not a PackageContent, or two nodes for one package: served to nobody
	dups       []string // the paths of the nodes, when two or more name this package (sorted)
}

// keptNode is what the catalog keeps of one package node, keyed by its
// path: a catalogPackage without the path (the key already holds it) and
// without dups (a node has none). At 100,000 packages the nodes map is half
// of the catalog and lives as long as it, so every word here is a word the
// collector's mark scans in every cycle: 40 bytes and two pointers a node
// where the catalogPackage was 80 bytes and four.
type keptNode struct {
	name       string
	tier       string
	unreadable bool
}

func keepNode(p catalogPackage) keptNode {
	return keptNode{name: p.name, tier: p.tier, unreadable: p.unreadable}
}

// at is the package the node at path says, as decodePackage read it.
func (n keptNode) at(path string) catalogPackage {
	return catalogPackage{name: n.name, path: path, tier: n.tier, unreadable: n.unreadable}
}

// catalogState is one version of the catalog: a value, never modified once
// published.
type catalogState struct {
	version uint64
	// changed lists the packages (by moduleKey) whose nodes this version
	// changed from version-1; nil after a full answer (anything may have).
	// An index assembled on version-1 re-checks only these.
	changed []string
	// Both maps are shared with the previous version (layered): a live
	// frame costs O(its nodes), not a copy of every package.
	nodes    *layered[keptNode]       // keyed by node path: what the query said
	packages *layered[catalogPackage] // keyed by moduleKey(plugin): derived from nodes
}

// lookup returns what the catalog says of plugin, compared without case. A
// plugin without a package node is not known, and a package whose tier is
// not known is served to nobody: it comes back unreadable, so that the
// index leaves it out and a download refuses it. Fail closed: a bundle
// whose package node is not (yet) known here is never served at a guessed
// tier.
func (c *catalogState) lookup(plugin string) catalogPackage {
	p, ok := c.packages.get(moduleKey(plugin))
	if !ok {
		return catalogPackage{name: plugin, unreadable: true}
	}
	return p
}

// catalogHealth is what /healthz and the metrics report of the catalog.
type catalogHealth struct {
	ready     bool      // an Initial has arrived at least once
	available bool      // the live query is running and has sent its Initial
	problem   string    // why it is not available; "" when it is
	since     time.Time // when it became unavailable
}

// catalog is the server's one live query over the package nodes, kept as a
// map from plugin to tier and a version that changes with every change.
// Requests read its state; none of them queries the mesh.
type catalog struct {
	svc   mesh.Store
	query string
	clk   clock.Clock
	retry time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	state   *catalogState                   // nil until the first Initial
	first   *rx.AsyncSubject[*catalogState] // completes with the first Initial
	changed chan struct{}                   // closed (and replaced) when state or live changes
	live    bool                            // the current query has sent its Initial
	problem string
	since   time.Time
	attempt uint64 // frames of an older subscription are ignored
	sub     rx.Subscription
	feed    rx.Subscription // the store's change feed state, when it reports one

	// feedDown: the store's change feed is down, so the live query may miss
	// changes; the catalog is incomplete until a full answer after it is back.
	feedDown bool
	timer    rx.Subscription
	closed   bool
}

// catalogWaitMessage is the debug line a reader logs when it waits for the
// catalog's first answer: a slow first index request can be told apart.
const catalogWaitMessage = "registry: waiting for the package catalog's first answer"

func newCatalog(svc mesh.Store, source string, clk clock.Clock, retry time.Duration, log *slog.Logger) *catalog {
	return &catalog{
		svc:     svc,
		query:   "namespace:" + source + " nodeType:" + PackageNodeType,
		clk:     clk,
		retry:   retry,
		log:     log,
		first:   rx.NewAsyncSubject[*catalogState](),
		changed: make(chan struct{}),
		problem: "waiting for the package catalog's first answer",
		since:   clk.Now(),
	}
}

// start subscribes the live query. It is called by NewServer and, after a
// failure, by the retry timer; never by a request.
func (c *catalog) start() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.attempt++
	attempt := c.attempt
	c.live = false
	c.timer = nil
	c.mu.Unlock()

	sub := c.svc.Query(c.query).Subscribe(rx.NewObserver(
		func(ch mesh.Change) { c.apply(attempt, ch) },
		func(err error) { c.failed(attempt, err) },
		func() { c.failed(attempt, errors.New("the live query ended")) },
	))

	c.mu.Lock()
	if c.closed || c.attempt != attempt {
		c.mu.Unlock()
		sub.Unsubscribe()
		return
	}
	c.sub = sub
	c.mu.Unlock()
}

// apply folds one frame into a new state.
func (c *catalog) apply(attempt uint64, ch mesh.Change) {
	c.mu.Lock()
	if c.closed || attempt != c.attempt {
		c.mu.Unlock()
		return
	}
	if ch.Kind != mesh.Initial && ch.Kind != mesh.Reset && c.state == nil {
		// A live frame before any Initial breaks the query's contract; wait
		// for the Initial rather than build on nothing.
		c.mu.Unlock()
		return
	}
	next, unreadable := nextCatalog(c.state, ch)
	// A full answer makes the catalog complete again, unless the store's
	// change feed is down (then frames may be missing from here on).
	full := ch.Kind == mesh.Initial || ch.Kind == mesh.Reset
	recovered := !c.live && c.state != nil && full && !c.feedDown
	first := c.state == nil
	c.state = next
	if full && !c.feedDown {
		c.live = true
		c.problem = ""
		c.since = time.Time{}
	}
	subject := c.first
	c.signal()
	c.mu.Unlock()

	for _, u := range unreadable {
		c.log.Warn("registry: a package node cannot be used (its content is not a package, or another node names the same package); the package is served to nobody until it is fixed",
			slog.String("problem", u))
	}
	if recovered {
		c.log.Info("registry: the package catalog is live again", slog.String("query", c.query))
	}
	if first {
		subject.OnNext(next)
		subject.OnCompleted()
	}
}

// failed records that the live query ended and arms the retry. The last
// known state stays served: a stale tier is what the registry knew, and
// health and metrics say it is stale.
func (c *catalog) failed(attempt uint64, err error) {
	c.mu.Lock()
	if c.closed || attempt != c.attempt {
		c.mu.Unlock()
		return
	}
	wasLive := c.live
	c.live = false
	c.problem = "the package catalog query failed: " + err.Error()
	if wasLive || c.since.IsZero() {
		c.since = c.clk.Now()
	}
	c.attempt++ // frames still queued from the failed subscription are ignored
	c.sub = nil
	c.signal()
	c.mu.Unlock()

	if wasLive {
		c.log.Warn("registry: the package catalog is unavailable; serving its last known state and retrying",
			slog.String("query", c.query), slog.Duration("retry", c.retry), slog.String("error", err.Error()))
	}
	timer := rx.Timer(c.retry, c.clk).Subscribe(rx.NewObserver(func(time.Time) { c.start() }, nil, nil))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		timer.Unsubscribe()
		return
	}
	c.timer = timer
	c.mu.Unlock()
}

// watchFeed follows the store's change feed state (nil while connected, why
// not while down): while it is down the catalog is not complete, because the
// live query hears of no change; it is complete again at the next full
// answer (the Reset the store sends every live query once the feed is back).
func (c *catalog) watchFeed(feed rx.Observable[error]) {
	if feed == nil {
		return
	}
	sub := feed.Subscribe(rx.NewObserver(func(down error) { c.feedState(down) }, nil, nil))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		sub.Unsubscribe()
		return
	}
	c.feed = sub
	c.mu.Unlock()
}

func (c *catalog) feedState(down error) {
	c.mu.Lock()
	wasLive := c.live
	if down == nil {
		c.feedDown = false
		c.mu.Unlock()
		return
	}
	c.feedDown = true
	c.live = false
	c.problem = "the store's change feed is down: " + down.Error()
	if wasLive || c.since.IsZero() {
		c.since = c.clk.Now()
	}
	c.signal()
	c.mu.Unlock()
	if wasLive {
		c.log.Warn("registry: the store's change feed is down; packages published meanwhile are withheld until it is back",
			slog.String("query", c.query), slog.String("error", down.Error()))
	}
}

// read answers the current state at once, or waits for the first Initial.
// The caller bounds the wait.
func (c *catalog) read() rx.Observable[*catalogState] {
	return rx.Defer(func() rx.Observable[*catalogState] {
		c.mu.Lock()
		st, first, closed := c.state, c.first, c.closed
		c.mu.Unlock()
		switch {
		case st != nil:
			return rx.Return(st)
		case closed:
			return rx.Throw[*catalogState](errCatalogClosed)
		}
		c.log.Debug(catalogWaitMessage)
		return first
	})
}

// current returns the state without waiting, if there is one.
func (c *catalog) current() (*catalogState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.state != nil
}

// signal wakes the publications waiting in knows; c.mu is held.
func (c *catalog) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// catalogCatchUpMessage is the debug line a publication logs when it waits
// for the catalog to learn its package.
const catalogCatchUpMessage = "registry: a publication waits for the package catalog to learn its package"

// catalogCatchUp bounds how long a publication waits for this replica's
// catalog to learn a package node it has just written (a frame of the live
// query, normally within milliseconds).
const catalogCatchUp = 5 * time.Second

// knows waits until the catalog holds package key, so that a publication
// answered next is listed by this replica's next index read, and reports
// whether it does. It returns at once while the live query is not running
// (the catalog cannot catch up then; the package is listed once it does,
// as any change is), and at the latest when ctx ends or catalogCatchUp
// passes on the clock. Its answer never fails a publication.
func (c *catalog) knows(ctx context.Context, key string) bool {
	ctx, cancel := c.clk.WithTimeout(ctx, catalogCatchUp)
	defer cancel()
	for waited := false; ; waited = true {
		c.mu.Lock()
		st, live, changed := c.state, c.live && !c.closed, c.changed
		c.mu.Unlock()
		if st != nil {
			if _, ok := st.packages.get(key); ok {
				return true
			}
		}
		if !live {
			return false
		}
		if !waited {
			c.log.Debug(catalogCatchUpMessage, slog.String("package", key))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// Complete reports whether the catalog knows every package's tier now: its
// first answer has arrived and its live query is running. While it is not,
// reason says why; packages it does not know are withheld from every index
// and download, and /readyz should say so.
func (c *catalog) Complete() (complete bool, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != nil && c.live {
		return true, ""
	}
	return false, c.problem
}

// health reports whether the catalog is live.
func (c *catalog) health() catalogHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return catalogHealth{ready: c.state != nil, available: c.live, problem: c.problem, since: c.since}
}

// close stops the live query and the retry; readers still waiting for the
// first Initial get errCatalogClosed.
func (c *catalog) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.signal()
	sub, timer, feed, first, waiting := c.sub, c.timer, c.feed, c.first, c.state == nil
	c.sub, c.timer, c.feed = nil, nil, nil
	c.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	if feed != nil {
		feed.Unsubscribe()
	}
	if timer != nil {
		timer.Unsubscribe()
	}
	if waiting {
		first.OnError(errCatalogClosed)
	}
}

// nextCatalog folds one frame of the package query into the version after
// prev (nil before the first Initial), and says which nodes cannot be used.
func nextCatalog(prev *catalogState, ch mesh.Change) (*catalogState, []string) {
	next := &catalogState{version: 1}
	var unreadable []string
	// Each node's content decodes to a tier string of its own: a frame
	// keeps each distinct tier once (at most 64 bytes each), not once per
	// package, since the catalog holds them as long as it lives.
	tiers := map[string]string{}
	decode := func(n mesh.Node) catalogPackage {
		p, err := decodePackage(n)
		if err != nil {
			unreadable = append(unreadable, fmt.Sprintf("%s: %v", n.Path, err))
		}
		if t, ok := tiers[p.tier]; ok {
			p.tier = t
		} else {
			tiers[p.tier] = p.tier
		}
		return p
	}
	if prev != nil {
		next.version = prev.version + 1
	}
	if ch.Kind == mesh.Initial || ch.Kind == mesh.Reset {
		nodes := make(map[string]keptNode, len(ch.Items))
		for _, n := range ch.Items {
			nodes[n.Path] = keepNode(decode(n))
		}
		packages := make(map[string]catalogPackage, len(nodes))
		var shared []string // keys two or more nodes name
		for path, kept := range nodes {
			p := kept.at(path)
			key := moduleKey(p.name)
			held, had := packages[key]
			switch {
			case !had:
				packages[key] = p
				continue
			case held.dups == nil:
				held = twoNodes([]string{held.path}, held.name)
				shared = append(shared, key)
			}
			held.dups = append(held.dups, path) // this build's own slice
			packages[key] = held
		}
		for _, key := range shared {
			p := packages[key]
			slices.Sort(p.dups)
			unreadable = append(unreadable, fmt.Sprintf("%s name one package", strings.Join(p.dups, " and ")))
		}
		next.nodes, next.packages = newLayered(nodes), newLayered(packages)
		return next, unreadable
	}

	// A live frame: only the packages its nodes named, before or after,
	// are derived again.
	next.changed = []string{}
	nodeChanges := map[string]overlay[keptNode]{}
	node := func(path string) (keptNode, bool) {
		if o, ok := nodeChanges[path]; ok {
			return o.v, !o.gone
		}
		return prev.nodes.get(path)
	}
	touched := map[string][]string{} // package key -> paths of changed nodes that may name it now
	for _, n := range ch.Items {
		next.changed = append(next.changed, moduleKey(n.Name), moduleKey(n.ID))
		if old, had := node(n.Path); had {
			next.changed = append(next.changed, moduleKey(old.name))
			touched[moduleKey(old.name)] = append(touched[moduleKey(old.name)], n.Path)
		}
		if ch.Kind == mesh.Removed {
			nodeChanges[n.Path] = overlay[keptNode]{gone: true}
			continue
		}
		p := decode(n)
		nodeChanges[n.Path] = overlay[keptNode]{v: keepNode(p)}
		touched[moduleKey(p.name)] = append(touched[moduleKey(p.name)], n.Path)
	}
	next.nodes = prev.nodes.with(nodeChanges)
	packageChanges := make(map[string]overlay[catalogPackage], len(touched))
	for key, changedPaths := range touched {
		var paths []string
		if held, had := prev.packages.get(key); had {
			paths = append(paths, held.dups...)
			if held.dups == nil {
				paths = append(paths, held.path)
			}
		}
		paths = append(paths, changedPaths...)
		slices.Sort(paths)
		var first catalogPackage
		naming := paths[:0] // the nodes that name key now, in path order
		for _, path := range slices.Compact(paths) {
			n, ok := next.nodes.get(path)
			if !ok || moduleKey(n.name) != key {
				continue // removed, or now names another package
			}
			if len(naming) == 0 {
				first = n.at(path)
			}
			naming = append(naming, path)
		}
		switch len(naming) {
		case 0:
			packageChanges[key] = overlay[catalogPackage]{gone: true}
		case 1:
			packageChanges[key] = overlay[catalogPackage]{v: first}
		default:
			p := twoNodes(slices.Clone(naming), first.name)
			unreadable = append(unreadable, fmt.Sprintf("%s name one package", strings.Join(p.dups, " and ")))
			packageChanges[key] = overlay[catalogPackage]{v: p}
		}
	}
	next.packages = prev.packages.with(packageChanges)
	return next, unreadable
}

// twoNodes is the package that the nodes at paths (two or more) name,
// spelled name: served to nobody, since they may say two tiers.
func twoNodes(paths []string, name string) catalogPackage {
	return catalogPackage{name: name, unreadable: true, dups: paths}
}

// decodePackage reads a package node. A node that cannot be read is kept as
// unreadable, so that its package is served to nobody rather than at a
// guessed tier.
func decodePackage(n mesh.Node) (catalogPackage, error) {
	name := n.Name
	if landing.ValidateModuleName(name) != nil || moduleKey(name) != moduleKey(n.ID) {
		name = n.ID
	}
	p := catalogPackage{name: name, path: n.Path}
	if len(n.Content) == 0 {
		return p, nil
	}
	var c PackageContent
	if err := json.Unmarshal(n.Content, &c); err != nil {
		p.unreadable = true
		return p, fmt.Errorf("content is not {\"tier\": ...}: %w", err)
	}
	tier, err := canonicalTier(c.Tier)
	if err != nil {
		p.unreadable = true
		return p, err
	}
	p.tier = tier
	return p, nil
}

// tierError reports a package tier that cannot be used.
type tierError struct {
	Tier   string
	Reason string
}

func (e *tierError) Error() string {
	return fmt.Sprintf("registry: invalid package tier %q: %s", e.Tier, e.Reason)
}

// canonicalTier trims and lower-cases (ASCII only: mesh.FoldName) a tier and checks that it is a plain
// plan id: up to 64 ASCII letters, digits, '.', '_' and '-'.
func canonicalTier(tier string) (string, error) {
	t := mesh.FoldName(strings.TrimSpace(tier))
	if t == "" {
		return "", nil
	}
	if reason := landing.NameProblem(t, 64, "._-"); reason != "" {
		return "", &tierError{Tier: tier, Reason: reason}
	}
	return t, nil
}

// moduleKey is a package's identity: its name compared with the name rule
// (ASCII case folding, mesh.FoldName), as the landing keys modules.
func moduleKey(module string) string { return mesh.FoldName(module) }
