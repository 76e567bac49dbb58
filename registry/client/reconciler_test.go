package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/rx/rxtest"
)

const pollEvery = time.Minute

// fakeRegistry is a real HTTP server serving an index and bundles that the
// test publishes; it can be told to refuse the index.
type fakeRegistry struct {
	srv *scriptedRegistry

	mu        sync.Mutex
	etags     bool // serve ETags and answer 304 to a matching If-None-Match
	refuse    int  // status the index answers with; 0 serves it
	index     Index
	bundles   map[string][]byte
	downloads map[string]int
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	f := &fakeRegistry{bundles: map[string][]byte{}, downloads: map[string]int{}}
	f.srv = newScriptedRegistry(t, f.serve)
	return f
}

func (f *fakeRegistry) serve(_ int, w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == IndexPath {
		if f.refuse != 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "registry says no", f.refuse)
			return
		}
		etag := ""
		if f.etags {
			doc, _ := json.Marshal(f.index)
			sum := sha256.Sum256(doc)
			etag = `"` + hex.EncodeToString(sum[:8]) + `"`
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		writeIndex(w, etag, f.index)
		return
	}
	key := r.URL.Path[len(BundlesPath)+1:]
	b, ok := f.bundles[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	f.downloads[key]++
	_, _ = w.Write(b)
}

// publish serves body as plugin@version, listed with digest (the body's
// sha256 when digest is "").
func (f *fakeRegistry) publish(plugin, version string, body []byte, digest string) {
	if digest == "" {
		sum := sha256.Sum256(body)
		digest = hex.EncodeToString(sum[:])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bundles[plugin+"/"+version] = body
	e := IndexEntry{Plugin: plugin, Version: version, URL: f.srv.URL + BundlesPath + "/" + plugin + "/" + version, SHA256: digest}
	for i := range f.index.Bundles {
		if f.index.Bundles[i].Plugin == plugin {
			f.index.Bundles[i] = e
			return
		}
	}
	f.index.Bundles = append(f.index.Bundles, e)
}

func (f *fakeRegistry) setRefusal(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = status
}

func (f *fakeRegistry) downloaded(plugin, version string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads[plugin+"/"+version]
}

// applied is one call to a test Apply.
type applied struct {
	entry IndexEntry
	body  []byte
}

// reconcilerUnderTest runs a Reconciler on a virtual clock until the test ends.
type reconcilerUnderTest struct {
	r       *Reconciler
	clk     *rxtest.Clock
	logs    *testkit.Logs
	gauges  *lastStatus
	polls   chan ReconcilerStatus
	applied chan applied
}

// runReconciler makes a Reconciler (see newReconcilerUnderTest) and runs it
// until the test ends.
func runReconciler(t *testing.T, reg *fakeRegistry, configure func(*Reconciler)) *reconcilerUnderTest {
	t.Helper()
	u := newReconcilerUnderTest(t, reg, configure)
	u.start(t)
	return u
}

// newReconcilerUnderTest makes a Reconciler of reg on a virtual clock,
// configured by configure, without running it.
func newReconcilerUnderTest(t *testing.T, reg *fakeRegistry, configure func(*Reconciler)) *reconcilerUnderTest {
	t.Helper()
	u := &reconcilerUnderTest{
		clk:     rxtest.NewClock(),
		gauges:  &lastStatus{},
		polls:   make(chan ReconcilerStatus, 16),
		applied: make(chan applied, 16),
	}
	var logger *slog.Logger
	u.logs, logger = testkit.CaptureLogs()
	u.r = &Reconciler{
		Client:   newTestClient(t, reg.srv.Server, Options{Attempts: 2, MaxRetryWait: time.Millisecond}),
		Interval: pollEvery,
		Clock:    u.clk,
		Logger:   logger,
		Gauges:   u.gauges,
		TempDir:  t.TempDir(),
		Apply: func(_ context.Context, e IndexEntry, bundle io.Reader) error {
			b, err := io.ReadAll(bundle)
			if err != nil {
				return err
			}
			u.applied <- applied{entry: e, body: b}
			return nil
		},
		Polled: func(st ReconcilerStatus) { u.polls <- st },
	}
	if configure != nil {
		configure(u.r)
	}
	return u
}

// start runs the Reconciler on a goroutine; stop cancels that Run and
// waits for it to return (at the latest when the test ends). Started again
// after stop, the same Reconciler runs anew, as a consumer's Reconciler
// stopped and started again does.
func (u *reconcilerUnderTest) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- u.r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			assert.ErrorIs(t, testkit.Receive(t, done, "Run returning once stopped"), context.Canceled)
		})
	}
	t.Cleanup(stop)
	return stop
}

// next advances to the next poll and returns its status.
func (u *reconcilerUnderTest) next(t *testing.T) ReconcilerStatus {
	t.Helper()
	u.clk.Advance(pollEvery)
	return testkit.Receive(t, u.polls, "the next poll")
}

// noApply fails if Apply was called since the last check. Apply runs on
// Run's goroutine before Polled, so after a poll's status has been received
// every Apply of that poll has happened.
func (u *reconcilerUnderTest) noApply(t *testing.T, msg string) {
	t.Helper()
	select {
	case a := <-u.applied:
		require.FailNow(t, msg, "applied %s@%s", a.entry.Plugin, a.entry.Version)
	default:
	}
}

// gauge is what a gauge mirroring the last status set would read (see
// clientmetrics, whose test holds it to the same values).
func (u *reconcilerUnderTest) gauge(t *testing.T, name string) float64 {
	t.Helper()
	u.gauges.mu.Lock()
	defer u.gauges.mu.Unlock()
	require.True(t, u.gauges.set, "the reconciler set no status")
	st := u.gauges.st
	unix := func(at time.Time) float64 {
		if at.IsZero() {
			return 0
		}
		return float64(at.UnixNano()) / 1e9
	}
	switch name {
	case "meshrx_registry_consumer_failing":
		if !st.Healthy && !st.FailingSince.IsZero() {
			return 1
		}
		return 0
	case "meshrx_registry_consumer_failing_since_seconds":
		return unix(st.FailingSince)
	case "meshrx_registry_consumer_last_success_seconds":
		return unix(st.LastSuccess)
	}
	require.FailNow(t, "no such gauge", name)
	return 0
}

// lastStatus is a StatusGauges that keeps the last status it was told.
type lastStatus struct {
	mu  sync.Mutex
	st  ReconcilerStatus
	set bool
}

func (g *lastStatus) Set(st ReconcilerStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st, g.set = st, true
}

func TestTheReconcilerMarksAFailureOnceAndRecovers(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
	}{
		{"attempts exhausted on 503", http.StatusServiceUnavailable},
		{"index refused with 401", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := newFakeRegistry(t)
			crm := testkit.RandomBytes(4 << 10)
			reg.publish("Acme.Crm", "1.0.0", crm, "")
			reg.setRefusal(c.status)
			u := runReconciler(t, reg, nil)
			start := u.clk.Now()

			st := testkit.Receive(t, u.polls, "the first poll")
			assert.False(t, st.Healthy)
			assert.Contains(t, st.LastError, http.StatusText(c.status))
			assert.Equal(t, start, st.FailingSince)
			assert.True(t, st.LastSuccess.IsZero())
			assert.Equal(t, st, u.r.Status())
			assert.Equal(t, 1.0, u.gauge(t, "meshrx_registry_consumer_failing"))
			assert.Equal(t, float64(start.Unix()), u.gauge(t, "meshrx_registry_consumer_failing_since_seconds"))
			u.noApply(t, "nothing can be applied from a refused index")

			// A second failed poll keeps the mark and its start, and logs no
			// second warning: a warning per poll would make Len 2 here.
			st = u.next(t)
			assert.False(t, st.Healthy)
			assert.Equal(t, start, st.FailingSince)
			warns := u.logs.At(slog.LevelWarn)
			require.Len(t, warns, 1, "one warning on the way into failure, not one per poll")
			assert.Contains(t, warns[0].Attrs["error"].String(), http.StatusText(c.status))
			assert.Equal(t, reg.srv.URL, warns[0].Attrs["registry"].String())
			assert.Empty(t, u.logs.At(slog.LevelInfo), "a failure is never reported as information")

			reg.setRefusal(0)
			st = u.next(t)
			assert.True(t, st.Healthy)
			assert.Empty(t, st.LastError)
			assert.True(t, st.FailingSince.IsZero())
			assert.Equal(t, u.clk.Now(), st.LastSuccess)
			assert.Equal(t, map[string]string{"Acme.Crm": "1.0.0"}, st.Applied)
			assert.Equal(t, crm, testkit.Receive(t, u.applied, "the bundle applied after recovery").body)
			assert.Equal(t, 0.0, u.gauge(t, "meshrx_registry_consumer_failing"))
			assert.Equal(t, 0.0, u.gauge(t, "meshrx_registry_consumer_failing_since_seconds"))
			assert.Equal(t, float64(u.clk.Now().Unix()), u.gauge(t, "meshrx_registry_consumer_last_success_seconds"))
			infos := u.logs.At(slog.LevelInfo)
			require.Len(t, infos, 1, "one line on recovery")
			assert.Contains(t, infos[0].Message, "recovered")
			assert.Equal(t, 2*pollEvery, infos[0].Attrs["failedFor"].Duration())
			assert.Len(t, u.logs.At(slog.LevelWarn), 1)
		})
	}
}

func TestTheReconcilerAppliesANewVersionOnce(t *testing.T) {
	reg := newFakeRegistry(t)
	v1, v2 := testkit.RandomBytes(4<<10), testkit.RandomBytes(4<<10)
	reg.publish("Acme.Crm", "1.0.0", v1, "")
	u := runReconciler(t, reg, nil)

	// The fake serves no ETag here: what prevents re-applying must be the
	// reconciler's own record, not a 304.
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	first := testkit.Receive(t, u.applied, "1.0.0 applied")
	assert.Equal(t, "1.0.0", first.entry.Version)
	assert.Equal(t, v1, first.body)

	// The index is served again unchanged (and without an ETag): applying
	// again would put a second call on the channel.
	require.True(t, u.next(t).Healthy)
	u.noApply(t, "an applied version is not applied again")
	assert.Equal(t, 1, reg.downloaded("Acme.Crm", "1.0.0"), "nor downloaded again")

	reg.publish("Acme.Crm", "1.1.0", v2, "")
	st := u.next(t)
	require.True(t, st.Healthy)
	second := testkit.Receive(t, u.applied, "1.1.0 applied")
	assert.Equal(t, "1.1.0", second.entry.Version)
	assert.Equal(t, v2, second.body)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.1.0"}, st.Applied)

	require.True(t, u.next(t).Healthy)
	u.noApply(t, "the new version is applied once")
	assert.Empty(t, u.logs.At(slog.LevelWarn))
}

func TestTheReconcilerRefusesABundleWhoseDigestDoesNotMatch(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.etags = true
	good, tampered := testkit.RandomBytes(4<<10), testkit.RandomBytes(4<<10)
	listed := sha256.Sum256(good)
	reg.publish("Acme.Crm", "1.0.0", tampered, hex.EncodeToString(listed[:]))
	reg.publish("Acme.Billing", "2.0.0", testkit.RandomBytes(1<<10), "")
	u := runReconciler(t, reg, nil)

	st := testkit.Receive(t, u.polls, "the first poll")
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, "Acme.Crm@1.0.0")
	assert.Contains(t, st.LastError, "sha256")
	assert.NotContains(t, st.LastError, "Acme.Billing")
	assert.Equal(t, map[string]string{"Acme.Billing": "2.0.0"}, st.Applied)
	// Control: the bundle that matches is applied in the same poll, so it is
	// the digest that refused the other.
	assert.Equal(t, "Acme.Billing", testkit.Receive(t, u.applied, "the matching bundle").entry.Plugin)
	u.noApply(t, "a bundle whose digest does not match is never applied")
	assert.Equal(t, 1.0, u.gauge(t, "meshrx_registry_consumer_failing"))
	warns := u.logs.At(slog.LevelWarn)
	require.Len(t, warns, 1)
	assert.Contains(t, warns[0].Attrs["error"].String(), "Acme.Crm@1.0.0")

	// The registry repairs the bundle under the same, unchanged index (same
	// ETag): the failed entry must be fetched again. Had the reconciler kept
	// the ETag of an index it did not apply in full, it would get 304 here
	// and never retry.
	reg.publish("Acme.Crm", "1.0.0", good, "")
	st = u.next(t)
	assert.True(t, st.Healthy)
	assert.Equal(t, good, testkit.Receive(t, u.applied, "the repaired bundle").body)
	assert.Equal(t, map[string]string{"Acme.Billing": "2.0.0", "Acme.Crm": "1.0.0"}, st.Applied)
}

func TestAPollThatOutlivesItsBudgetIsCutAndMarked(t *testing.T) {
	const budget = 5 * time.Minute
	reg := newFakeRegistry(t)
	reg.publish("Acme.Crm", "1.0.0", testkit.RandomBytes(1<<10), "")
	applying := make(chan struct{})
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.PollBudget = budget
		r.Apply = func(ctx context.Context, _ IndexEntry, _ io.Reader) error {
			close(applying)
			<-ctx.Done() // an installer that never finishes on its own
			return ctx.Err()
		}
	})

	testkit.Receive(t, applying, "Apply being called")
	u.clk.Advance(budget - time.Nanosecond)
	select {
	case <-u.polls:
		require.FailNow(t, "the poll ended before its budget")
	default:
	}
	u.clk.Advance(time.Nanosecond)
	st := testkit.Receive(t, u.polls, "the poll cut at its budget")
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, "Acme.Crm@1.0.0: apply")
	assert.Contains(t, st.LastError, "budget of 5m0s ran out")
	assert.Empty(t, st.Applied)
}

func TestAReconcilerThatCannotWorkIsRefusedAtRun(t *testing.T) {
	reg := newFakeRegistry(t)
	client := newTestClient(t, reg.srv.Server, Options{})
	apply := func(context.Context, IndexEntry, io.Reader) error { return nil }
	for _, c := range []struct {
		r       *Reconciler
		setting string
	}{
		{&Reconciler{Apply: apply}, "Reconciler.Client"},
		{&Reconciler{Client: client}, "Reconciler.Apply"},
		{&Reconciler{Client: client, Apply: apply, Interval: -time.Second}, "Reconciler.Interval"},
	} {
		err := c.r.Run(t.Context())
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, c.setting, ce.Setting)
	}
	assert.Zero(t, reg.srv.requests(), "a refused Reconciler makes no request")
}
