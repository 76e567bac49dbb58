package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// Defaults for Reconciler fields left zero.
const (
	DefaultPollInterval   = time.Minute
	DefaultPollBudget     = 10 * time.Minute
	DefaultMaxBundleBytes = 256 << 20
	DefaultUninstallAfter = 15 * time.Minute
)

// maxReportedFailures bounds the failures LastError names; the rest are
// counted.
const maxReportedFailures = 10

// maxUninstallsPerPoll bounds the uninstalls one poll makes; the rest are
// made by the next polls.
const maxUninstallsPerPoll = 16

// Reconciler keeps a consumer's plugins at the versions its registry
// serves: every Interval it reads the index, downloads each bundle whose
// version it has not applied, checks the bundle against the index's sha256
// and hands it to Apply.
//
// The index is the caller's entitlement: a package the registry removed,
// or that the caller's grant or plan tier no longer includes, is absent
// from it (docs/registry.md; DESIGN: "a tier change that hides a package is
// a removal"). So a plugin this Reconciler applied that the index stops
// listing is uninstalled (Uninstall), but safely:
//
//   - only plugins this Reconciler applied (Status's Applied), never
//     another plugin of the consumer. Applied is kept in memory, so a
//     Reconciler that starts anew (the consumer restarted) knows nothing
//     it applied before, and keeps a plugin dropped meanwhile for good;
//     with Installed it starts from what the installer says is installed,
//     and such a plugin is uninstalled like any other;
//   - only once every index read for UninstallAfter (default 15m) has left
//     it out: a registry replica that does not yet know a package's tier
//     serves it to nobody until it does (fail closed), and such a passing
//     absence must not uninstall anything; a plugin listed again before then
//     is kept, and a failed or cut-off index read decides nothing;
//   - at most 16 per poll, each logged (slog, Warn) with how long it was
//     missing; a failed Uninstall is a failure of the poll, retried next poll.
//
// Without Uninstall, such a plugin is kept, listed in Status's Dropped, and
// one warning per plugin says so.
//
// A poll that fails leaves a mark an operator reads, never only a log line
// and a quietly frozen catalogue: Status reports it, the gauges
// meshrx_registry_consumer_failing and
// meshrx_registry_consumer_failing_since_seconds say so, one warning is
// logged on the way into failure (not one per poll) and one information line
// on recovery. Set Polled to publish the status elsewhere, e.g. as a node.
type Reconciler struct {
	Client *Client
	// Interval is the time between the end of one poll and the start of the
	// next. Default 1m.
	Interval time.Duration
	// PollBudget bounds one poll, downloads and Apply calls included; when it
	// runs out, the poll's context is cancelled, and the entries not yet
	// tried wait for the next poll (the status names the cut once). Default 10m.
	PollBudget time.Duration
	// Clock times the interval and the budget; nil means the real clock.
	Clock clock.Clock
	// Apply installs one verified bundle. It must honour ctx.
	Apply func(ctx context.Context, entry IndexEntry, bundle io.Reader) error
	// Logger receives the failure and recovery lines; nil means slog.Default().
	Logger *slog.Logger
	// Gauges, if set, is told every status the Reconciler records, as it
	// records it: package registry/client/clientmetrics mirrors it in
	// Prometheus gauges. Set is called with the Reconciler's lock held.
	Gauges StatusGauges
	// TempDir holds a bundle while it is checked; "" means os.TempDir().
	// Where an open file can be removed (not Windows), the file has no
	// name from the start, so a consumer killed mid-download leaves none.
	TempDir string
	// MaxBundleBytes refuses larger bundles with a *BundleSizeError, one
	// whose Content-Length says so before its body is read. Default 256 MiB.
	MaxBundleBytes int64
	// Polled, if set, is called on Run's goroutine after every poll with the
	// status it left. The next poll's timer is already armed when it runs.
	Polled func(ReconcilerStatus)
	// Uninstall removes plugin, applied at version, that the index no longer
	// lists (see above). It must honour ctx. nil keeps such plugins.
	Uninstall func(ctx context.Context, plugin, version string) error
	// UninstallAfter is how long a plugin must be missing from every index
	// read before it is uninstalled. Default 15m.
	UninstallAfter time.Duration
	// Installed, if set, lists the plugins installed now (plugin name to
	// version) as Apply and Uninstall left them: the installer's own record,
	// such as the directory Apply unpacks bundles into. Run starts from it
	// instead of from nothing: it reads it before its first poll (a poll
	// whose read fails fails, step "installed", and the next poll reads it
	// again) and takes it as Applied. So a restarted consumer uninstalls a
	// plugin the index stopped listing while it was down (once missing for
	// UninstallAfter from its first index read; the time it was down does
	// not count), and downloads nothing already installed at the listed
	// version. Every plugin it lists is the Reconciler's to uninstall: it
	// must list only what Apply installed, each name once (two names equal
	// without case are refused). It must honour ctx. nil means Applied is
	// kept in memory only (see above).
	Installed func(ctx context.Context) (map[string]string, error)

	mu      sync.Mutex
	status  ReconcilerStatus
	missing map[string]*missingPlugin // applied plugins the index no longer lists
	// missingTag is the etag of the index whose omissions missing holds: a
	// poll that fails notes them but does not advance etag, so a 304 for
	// etag may name another index, one that lists them.
	missingTag string
	etag       string // of the last index applied in full
	running    bool
	// known says Applied holds what Installed listed, read since Run began
	// (always true without Installed).
	known  bool
	gauges StatusGauges // Gauges while Run runs
}

// missingPlugin is an applied plugin the index stopped listing.
type missingPlugin struct {
	since  time.Time // the first index read that left it out
	tried  time.Time // the last failed Uninstall; zero if none
	warned bool      // kept for want of Uninstall, and said so
}

// StatusGauges mirrors a Reconciler's status where an operator reads it.
type StatusGauges interface {
	Set(ReconcilerStatus)
}

// ReconcilerStatus is what a Reconciler's polls have left.
type ReconcilerStatus struct {
	Healthy      bool      // the last poll succeeded
	LastError    string    // why the last poll failed (its first 10 failures, the rest counted); "" when healthy
	FailingSince time.Time // when the current run of failures began; zero when healthy
	LastSuccess  time.Time // when a poll last succeeded; zero if none has
	// Applied maps each plugin to the version last applied.
	Applied map[string]string
	// Dropped maps each applied plugin the index no longer lists to its
	// version: it is uninstalled once missing for UninstallAfter, or kept
	// when the Reconciler has no Uninstall.
	Dropped map[string]string
}

// ReconcileError reports one step of a poll that failed: reading the index,
// or downloading, verifying or applying one bundle.
type ReconcileError struct {
	Step    string // "installed", "index", "download", "verify", "apply" or "uninstall"
	Plugin  string // "" for the index
	Version string
	Err     error
}

func (e *ReconcileError) Error() string {
	if e.Plugin == "" {
		return fmt.Sprintf("registry: %s: %v", e.Step, e.Err)
	}
	return fmt.Sprintf("registry: %s@%s: %s: %v", shown(e.Plugin, landing.ValidateModuleName), shown(e.Version, landing.ValidateVersion), e.Step, e.Err)
}

// shown is s as an error names it: as it is when valid, quoted otherwise,
// so that a name the index sent (a line break, a control character) cannot
// forge a line of LastError or of the log that carries it.
func shown(s string, valid func(string) error) string {
	if valid(s) == nil {
		return s
	}
	return strconv.Quote(s)
}

func (e *ReconcileError) Unwrap() error { return e.Err }

// DigestError reports a bundle whose bytes do not match the sha256 the index
// lists for it, or an index entry with no usable sha256.
type DigestError struct {
	Plugin, Version string
	Want, Got       string // Got is "" when Want is not a sha256
}

func (e *DigestError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("registry: the index lists %s@%s with no valid sha256 (%q); it cannot be verified", e.Plugin, e.Version, e.Want)
	}
	return fmt.Sprintf("registry: bundle %s@%s has sha256 %s, the index lists %s", e.Plugin, e.Version, e.Got, e.Want)
}

// BundleSizeError reports a bundle larger than the Reconciler's
// MaxBundleBytes. One whose Content-Length says so is refused before its
// body is read; one sent without it, once Limit+1 bytes have been read.
type BundleSizeError struct {
	Plugin, Version string
	Limit           int64
	Declared        int64 // its Content-Length; -1 when it declared none
}

func (e *BundleSizeError) Error() string {
	if e.Declared < 0 {
		return fmt.Sprintf("registry: bundle %s@%s is larger than the %d bytes allowed (Reconciler.MaxBundleBytes)", e.Plugin, e.Version, e.Limit)
	}
	return fmt.Sprintf("registry: bundle %s@%s declares %d bytes, more than the %d bytes allowed (Reconciler.MaxBundleBytes)", e.Plugin, e.Version, e.Declared, e.Limit)
}

// PollBudgetError is the cause of a poll cut off by its budget.
type PollBudgetError struct {
	Budget time.Duration
}

func (e *PollBudgetError) Error() string {
	return fmt.Sprintf("registry: the poll's budget of %s ran out", e.Budget)
}

// Status returns what the polls so far have left.
func (r *Reconciler) Status() ReconcilerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked()
}

func (r *Reconciler) statusLocked() ReconcilerStatus {
	st := r.status
	st.Applied = maps.Clone(r.status.Applied)
	if st.Applied == nil {
		st.Applied = map[string]string{}
	}
	st.Dropped = map[string]string{}
	for p := range r.missing {
		st.Dropped[p] = r.status.Applied[p]
	}
	return st
}

// reconcilerConfig is a Reconciler's settings with defaults applied.
type reconcilerConfig struct {
	clk      clock.Clock
	interval time.Duration
	budget   time.Duration
	logger   *slog.Logger
	tempDir  string
	maxBytes int64
	dropAge  time.Duration
}

func (r *Reconciler) config() (reconcilerConfig, error) {
	switch {
	case r.Client == nil:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.Client", Problem: "is nil"}
	case r.Apply == nil:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.Apply", Problem: "is nil"}
	case r.Interval < 0:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.Interval", Value: r.Interval.String(), Problem: "is negative"}
	case r.PollBudget < 0:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.PollBudget", Value: r.PollBudget.String(), Problem: "is negative"}
	case r.UninstallAfter < 0:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.UninstallAfter", Value: r.UninstallAfter.String(), Problem: "is negative"}
	case r.MaxBundleBytes < 0:
		return reconcilerConfig{}, &ConfigError{Setting: "Reconciler.MaxBundleBytes", Value: fmt.Sprint(r.MaxBundleBytes), Problem: "is negative"}
	}
	cfg := reconcilerConfig{
		clk:      r.Clock,
		interval: orDefault(r.Interval, DefaultPollInterval),
		budget:   orDefault(r.PollBudget, DefaultPollBudget),
		logger:   r.Logger,
		tempDir:  r.TempDir,
		maxBytes: r.MaxBundleBytes,
		dropAge:  orDefault(r.UninstallAfter, DefaultUninstallAfter),
	}
	if cfg.clk == nil {
		cfg.clk = clock.New()
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.maxBytes == 0 {
		cfg.maxBytes = DefaultMaxBundleBytes
	}
	return cfg, nil
}

// ErrReconcilerRunning is returned by Run called while another Run of the
// same Reconciler has not returned: one Reconciler polls on one goroutine.
var ErrReconcilerRunning = errors.New("registry: the Reconciler is already running (one Run at a time; stop it and wait for Run to return first)")

// Run polls at once and then every Interval until ctx ends, and returns
// ctx's error. It returns at once with a *ConfigError for an unusable
// Reconciler, and with ErrReconcilerRunning while another Run of it has not
// returned. A poll that ctx interrupts leaves no mark: stopping is not a
// failure. Run may be called again once it has returned: what was applied
// is kept (or read again from Installed), and a plugin missing from the
// index is timed anew from the new Run's first index read.
func (r *Reconciler) Run(ctx context.Context) error {
	cfg, err := r.config()
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return ErrReconcilerRunning
	}
	r.running = true
	r.known = r.Installed == nil
	// Absences are timed from this Run's index reads: the time between an
	// earlier Run and this one does not count towards UninstallAfter (a
	// stopped consumer read no index). The index is read in full first, so
	// a 304 cannot hide what the last Run noted.
	r.missing, r.missingTag, r.etag = nil, "", ""
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running, r.gauges = false, nil
		r.mu.Unlock()
	}()

	r.mu.Lock()
	r.gauges = r.Gauges
	r.setGauges()
	r.mu.Unlock()

	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, done := r.poll(ctx, cfg)
		if !done {
			return ctx.Err()
		}
		tick := make(chan struct{}, 1)
		next := rx.Timer(cfg.interval, cfg.clk).Subscribe(rx.NewObserver(func(time.Time) {
			select {
			case tick <- struct{}{}:
			default:
			}
		}, nil, nil))
		if r.Polled != nil {
			r.Polled(st)
		}
		select {
		case <-tick:
		case <-ctx.Done():
			next.Unsubscribe()
			return ctx.Err()
		}
	}
}

// poll runs one poll within the budget and marks its outcome. It reports
// false if ctx ended meanwhile.
func (r *Reconciler) poll(ctx context.Context, cfg reconcilerConfig) (ReconcilerStatus, bool) {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	budget := rx.Timer(cfg.budget, cfg.clk).Subscribe(rx.NewObserver(func(time.Time) {
		cancel(&PollBudgetError{Budget: cfg.budget})
	}, nil, nil))
	defer budget.Unsubscribe()

	failures := r.reconcile(pctx, cfg)
	if ctx.Err() != nil {
		return ReconcilerStatus{}, false
	}
	return r.mark(failures, cfg), true
}

// reconcile reads the index and installs what is new, returning what failed.
func (r *Reconciler) reconcile(ctx context.Context, cfg reconcilerConfig) []error {
	if err := r.readInstalled(ctx); err != nil {
		return []error{err}
	}
	r.mu.Lock()
	etag := r.etag
	r.mu.Unlock()

	idx, newTag, err := r.Client.Index(ctx, etag)
	if errors.Is(err, ErrNotModified) {
		r.mu.Lock()
		same := len(r.missing) == 0 || r.missingTag == etag
		r.mu.Unlock()
		if same {
			// The index is the one whose omissions were noted: their time runs on.
			return r.uninstallMissing(ctx, cfg)
		}
		// The omissions were noted from another index (read by a poll that
		// failed); this one may list them: read it in full.
		idx, newTag, err = r.Client.Index(ctx, "")
	}
	if err != nil {
		return []error{&ReconcileError{Step: "index", Err: budgetCause(ctx, err)}}
	}

	var failures []error
	// Names are compared without case, as the registry compares them.
	listed := map[string]int{}
	for _, e := range idx.Bundles {
		listed[landing.FoldName(e.Plugin)]++
	}
	reported := map[string]bool{}
	cut := false // the last failure was the poll's end
	for i, e := range idx.Bundles {
		if ctx.Err() != nil {
			// The poll is cut off (or stopped): the rest wait for the next
			// poll, and the cut is reported once, not once per entry left.
			if !cut {
				failures = append(failures, &ReconcileError{Step: "index",
					Err: fmt.Errorf("%d entries left for the next poll: %w", len(idx.Bundles)-i, budgetCause(ctx, ctx.Err()))})
			}
			break
		}
		if n := listed[landing.FoldName(e.Plugin)]; n > 1 {
			// Applying each in turn would flap between versions every poll.
			if !reported[e.Plugin] {
				reported[e.Plugin] = true
				failures = append(failures, &ReconcileError{Step: "index", Plugin: e.Plugin, Version: e.Version,
					Err: fmt.Errorf("the index lists plugin %q %d times; none of its entries is applied", e.Plugin, n)})
			}
			continue
		}
		r.mu.Lock()
		key := appliedKey(r.status.Applied, e.Plugin)
		have := r.status.Applied[key]
		r.mu.Unlock()
		if have == e.Version {
			continue
		}
		if err := r.install(ctx, cfg, e); err != nil {
			failures = append(failures, err)
			cut = ctx.Err() != nil
			continue
		}
		r.mu.Lock()
		if r.status.Applied == nil {
			r.status.Applied = map[string]string{}
		}
		r.status.Applied[key] = e.Version
		r.mu.Unlock()
	}
	r.noteMissing(idx, newTag, cfg)
	failures = append(failures, r.uninstallMissing(ctx, cfg)...)
	// Only an index applied in full is remembered: a 304 must not hide an
	// entry that failed.
	if len(failures) == 0 {
		r.mu.Lock()
		r.etag = newTag
		r.mu.Unlock()
	}
	return failures
}

// readInstalled takes what Installed lists as Applied, unless it has done
// so since Run began (or there is no Installed).
func (r *Reconciler) readInstalled(ctx context.Context) error {
	r.mu.Lock()
	known := r.known
	r.mu.Unlock()
	if known {
		return nil
	}
	fail := func(err error) error { return &ReconcileError{Step: "installed", Err: budgetCause(ctx, err)} }
	got, err := r.Installed(ctx)
	if err != nil {
		return fail(err)
	}
	folded := make(map[string]string, len(got))
	for p := range got {
		if strings.TrimSpace(p) == "" {
			return fail(errors.New("Reconciler.Installed lists a plugin with an empty name"))
		}
		key := landing.FoldName(p)
		if q, dup := folded[key]; dup {
			a, b := min(p, q), max(p, q)
			return fail(fmt.Errorf("Reconciler.Installed lists %q and %q, one plugin to the registry (names are compared without case)", a, b))
		}
		folded[key] = p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Applied = maps.Clone(got)
	if r.status.Applied == nil {
		r.status.Applied = map[string]string{}
	}
	// Nothing is missing yet in this Run (see Run): the index is read in
	// full next, which notes what it leaves out from now.
	r.missing, r.missingTag, r.etag, r.known = nil, "", "", true
	return nil
}

// appliedKey is the spelling under which applied holds plugin, compared
// without case (the first spelling applied is kept), or plugin itself.
func appliedKey(applied map[string]string, plugin string) string {
	if _, ok := applied[plugin]; ok {
		return plugin
	}
	for k := range applied {
		if landing.CompareNames(k, plugin) == 0 {
			return k
		}
	}
	return plugin
}

// noteMissing records which applied plugins idx, an index read in full
// whose etag is tag, leaves out (compared without case, as the registry
// compares names), from when, and forgets those it lists again.
func (r *Reconciler) noteMissing(idx Index, tag string, cfg reconcilerConfig) {
	listed := make(map[string]bool, len(idx.Bundles))
	for _, e := range idx.Bundles {
		listed[landing.FoldName(e.Plugin)] = true
	}
	now := cfg.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missingTag = tag
	for p, m := range r.missing {
		if _, applied := r.status.Applied[p]; !applied || listed[landing.FoldName(p)] {
			if applied {
				cfg.logger.Info("registry consumer: a plugin the index had left out is listed again; it is kept",
					slog.String("plugin", p), slog.Duration("missingFor", now.Sub(m.since)))
			}
			delete(r.missing, p)
		}
	}
	for p, v := range r.status.Applied {
		if listed[landing.FoldName(p)] || r.missing[p] != nil {
			continue
		}
		if r.missing == nil {
			r.missing = map[string]*missingPlugin{}
		}
		r.missing[p] = &missingPlugin{since: now}
		cfg.logger.Info("registry consumer: the index no longer lists an applied plugin; it is uninstalled if it stays missing",
			slog.String("plugin", p), slog.String("version", v), slog.Duration("uninstallAfter", cfg.dropAge))
	}
}

// uninstallMissing uninstalls the applied plugins missing from the index
// for cfg.dropAge, at most maxUninstallsPerPoll of them, and returns what
// failed.
func (r *Reconciler) uninstallMissing(ctx context.Context, cfg reconcilerConfig) []error {
	now := cfg.clk.Now()
	type due struct {
		plugin, version string
		since, tried    time.Time
	}
	var dues []due
	r.mu.Lock()
	for p, m := range r.missing {
		if now.Sub(m.since) < cfg.dropAge {
			continue
		}
		if r.Uninstall == nil {
			if !m.warned {
				m.warned = true
				cfg.logger.Warn("registry consumer keeps a plugin its index no longer lists: the Reconciler has no Uninstall",
					slog.String("plugin", p), slog.String("version", r.status.Applied[p]), slog.Duration("missingFor", now.Sub(m.since)))
			}
			continue
		}
		dues = append(dues, due{p, r.status.Applied[p], m.since, m.tried})
	}
	r.mu.Unlock()
	// Those tried longest ago (never, first) go first: plugins whose
	// Uninstall keeps failing must not take every poll's turns.
	slices.SortFunc(dues, func(a, b due) int {
		if c := a.tried.Compare(b.tried); c != 0 {
			return c
		}
		return strings.Compare(a.plugin, b.plugin)
	})
	if len(dues) > maxUninstallsPerPoll {
		dues = dues[:maxUninstallsPerPoll]
	}
	var failures []error
	for _, d := range dues {
		if ctx.Err() != nil {
			// The poll is cut off or stopped: the rest wait for the next.
			failures = append(failures, &ReconcileError{Step: "uninstall", Plugin: d.plugin, Version: d.version, Err: budgetCause(ctx, ctx.Err())})
			break
		}
		if err := r.Uninstall(ctx, d.plugin, d.version); err != nil {
			failures = append(failures, &ReconcileError{Step: "uninstall", Plugin: d.plugin, Version: d.version, Err: budgetCause(ctx, err)})
			r.mu.Lock()
			if m := r.missing[d.plugin]; m != nil {
				m.tried = now
			}
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		delete(r.status.Applied, d.plugin)
		delete(r.missing, d.plugin)
		r.mu.Unlock()
		cfg.logger.Warn("registry consumer uninstalled a plugin its index no longer lists",
			slog.String("plugin", d.plugin), slog.String("version", d.version), slog.Duration("missingFor", now.Sub(d.since)))
	}
	return failures
}

// install downloads e, checks it against the index's digest and applies it.
func (r *Reconciler) install(ctx context.Context, cfg reconcilerConfig, e IndexEntry) error {
	fail := func(step string, err error) error {
		return &ReconcileError{Step: step, Plugin: e.Plugin, Version: e.Version, Err: budgetCause(ctx, err)}
	}
	want := landing.FoldName(strings.TrimSpace(e.SHA256))
	if !isSHA256Hex(want) {
		return fail("verify", &DigestError{Plugin: e.Plugin, Version: e.Version, Want: e.SHA256})
	}
	body, err := r.Client.Download(ctx, e)
	var digest *DigestError
	if errors.As(err, &digest) {
		return fail("verify", err)
	}
	if err != nil {
		return fail("download", err)
	}
	defer body.Close()
	if vb, ok := body.(*verifiedBody); ok && vb.size > cfg.maxBytes {
		// Said before its body: nothing of it is read.
		return fail("download", &BundleSizeError{Plugin: e.Plugin, Version: e.Version, Limit: cfg.maxBytes, Declared: vb.size})
	}

	// The bundle is kept aside until its digest is known: Apply never sees
	// bytes that were not verified. Its file loses its name at once (where
	// an open file can be removed), so a consumer killed mid-download or
	// mid-Apply leaves nothing in TempDir; elsewhere it is removed after.
	f, err := os.CreateTemp(cfg.tempDir, "meshrx-bundle-*")
	if err != nil {
		return fail("download", err)
	}
	named := os.Remove(f.Name()) != nil
	defer func() {
		_ = f.Close()
		if named {
			_ = os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, cfg.maxBytes+1))
	if errors.As(err, &digest) {
		return fail("verify", err)
	}
	if err != nil {
		return fail("download", err)
	}
	if n > cfg.maxBytes {
		return fail("download", &BundleSizeError{Plugin: e.Plugin, Version: e.Version, Limit: cfg.maxBytes, Declared: -1})
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fail("verify", &DigestError{Plugin: e.Plugin, Version: e.Version, Want: want, Got: got})
	}
	if err := r.Apply(ctx, e, io.NewSectionReader(f, 0, n)); err != nil {
		return fail("apply", err)
	}
	return nil
}

// mark records a poll's outcome in the status and the gauges, and logs a
// transition into failure or out of it.
func (r *Reconciler) mark(failures []error, cfg reconcilerConfig) ReconcilerStatus {
	now := cfg.clk.Now()
	registry := r.Client.base.String()
	r.mu.Lock()
	if len(failures) == 0 {
		since := r.status.FailingSince
		r.status.Healthy, r.status.LastError, r.status.FailingSince, r.status.LastSuccess = true, "", time.Time{}, now
		r.setGauges()
		st := r.statusLocked()
		r.mu.Unlock()
		if !since.IsZero() {
			cfg.logger.Info("registry consumer recovered: the catalogue is refreshed again",
				slog.String("registry", registry), slog.Duration("failedFor", now.Sub(since)), slog.Int("applied", len(st.Applied)))
		}
		return st
	}
	msgs := make([]string, 0, min(len(failures), maxReportedFailures)+1)
	for _, err := range failures[:min(len(failures), maxReportedFailures)] {
		msgs = append(msgs, err.Error())
	}
	if n := len(failures) - maxReportedFailures; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more failures", n))
	}
	entering := r.status.FailingSince.IsZero()
	r.status.Healthy, r.status.LastError = false, strings.Join(msgs, "; ")
	if entering {
		r.status.FailingSince = now
	}
	r.setGauges()
	st := r.statusLocked()
	r.mu.Unlock()
	if entering {
		attrs := []any{slog.String("registry", registry), slog.String("error", st.LastError), slog.Int("applied", len(st.Applied))}
		if !st.LastSuccess.IsZero() {
			attrs = append(attrs, slog.Time("lastSuccess", st.LastSuccess))
		}
		cfg.logger.Warn("registry consumer cannot refresh its catalogue; it keeps the versions applied so far until a poll succeeds", attrs...)
	} else {
		cfg.logger.Debug("registry consumer still failing", slog.String("registry", registry), slog.String("error", st.LastError))
	}
	return st
}

// budgetCause replaces the bare cancellation an interrupted call reports by
// the budget that caused it.
func budgetCause(ctx context.Context, err error) error {
	var pb *PollBudgetError
	if cause := context.Cause(ctx); errors.As(cause, &pb) {
		return fmt.Errorf("%w (%v)", pb, err)
	}
	return err
}

func isSHA256Hex(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// setGauges mirrors the status in the gauges, if any; r.mu is held.
func (r *Reconciler) setGauges() {
	if r.gauges != nil {
		r.gauges.Set(r.statusLocked())
	}
}
