package landing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type activationResult struct {
	act Activation
	err error
}

func readAsync(ctx context.Context, l *ModuleLanding) <-chan activationResult {
	ch := make(chan activationResult, 1)
	go func() {
		act, err := l.Activation(ctx)
		ch <- activationResult{act, err}
	}()
	return ch
}

func landAsync(ctx context.Context, l *ModuleLanding, module, version string, archive []byte) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := l.Land(ctx, module, version, archive)
		ch <- err
	}()
	return ch
}

// parkingVolume runs park before it writes a record: between a landing's
// bytes and its record, as a slow volume would hold it.
type parkingVolume struct {
	Volume
	park func(ctx context.Context, r Record)
}

func (v *parkingVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	if strings.Contains(name, "/records/.tmp-") && v.park != nil {
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		v.park(ctx, r)
	}
	return v.Volume.WriteFile(ctx, name, data)
}

// parkOn wraps v so that landings of version park between their bytes and
// their record, announcing each parked record on the returned channel.
func parkOn(t *testing.T, v Volume, version string) (Volume, <-chan Record, *testkit.Releaser) {
	parked := make(chan Record, 4)
	rel := testkit.NewReleaser(t)
	return &parkingVolume{Volume: v, park: func(ctx context.Context, r Record) {
		if r.Version == version {
			parked <- r
			rel.Wait(ctx)
		}
	}}, parked, rel
}

// waitsOn returns a logger that notes the waits for a lane or pool, and a
// function returning the n-th (from 0) thing waited on, waiting at most
// testkit.Bound for it.
func waitsOn(t *testing.T) (*slog.Logger, func(n int) string) {
	logs, logger := testkit.CaptureLogs()
	return logger, func(n int) string {
		t.Helper()
		for {
			if w := logs.Matching(slog.LevelDebug, WaitingMessage); len(w) > n {
				return w[n].Attrs["waitingOn"].String()
			}
			testkit.Receive(t, logs.Added, "a wait for a lane or pool")
		}
	}
}

// waits returns how many waits for a lane or pool logger has noted.
func waits(logs *testkit.Logs) int { return len(logs.Matching(slog.LevelDebug, WaitingMessage)) }

func TestActivationReadIsNotQueuedBehindALanding(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	pv, parked, rel := parkOn(t, DirVolume(root), "2.0.0")
	logs, logger := testkit.CaptureLogs()
	l := newLanding(t, pv, Options{Logger: logger})
	_, err := l.Land(ctx, "Crm", "1.0.0", testkit.ModuleArchive(t, "Crm", "1.0.0", 3))
	require.NoError(t, err)

	landed := landAsync(ctx, l, "Crm", "2.0.0", testkit.ModuleArchive(t, "Crm", "2.0.0", 3))
	p := testkit.Receive(t, parked, "the 2.0.0 landing reaching its recording window")
	_, err = os.Stat(filepath.Join(root, filepath.FromSlash(p.FilesDir())))
	require.NoError(t, err, "the parked landing's bytes are on disk, so a careless read could see them")

	res := testkit.Receive(t, readAsync(ctx, l), "the authoritative read during a parked landing")
	require.NoError(t, res.err)
	assert.Equal(t, map[string]string{"Crm": "1.0.0"}, servedVersions(res.act),
		"a read during the landing sees the previous activation, not the parked version")
	assert.Zero(t, waits(logs), "the read never waited on anything")

	rel.Release()
	require.NoError(t, testkit.Receive(t, landed, "the released landing finishing"))
	after, err := l.Activation(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Crm": "2.0.0"}, servedVersions(after), "positive control: once recorded, the landing is served")

	t.Run("negative control: a landing during the parked one is queued behind it, as a read on the lane would be", func(t *testing.T) {
		pv, parked, rel := parkOn(t, DirVolume(root), "3.0.0")
		logger, waitedOn := waitsOn(t)
		neg := newLanding(t, pv, Options{Logger: logger})
		landed := landAsync(ctx, neg, "Crm", "3.0.0", testkit.ModuleArchive(t, "Crm", "3.0.0", 3))
		testkit.Receive(t, parked, "the 3.0.0 landing reaching its recording window")

		otherCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		other := landAsync(otherCtx, neg, "Erp", "1.0.0", testkit.ModuleArchive(t, "Erp", "1.0.0", 1))
		assert.Equal(t, "the landing lane", waitedOn(0), "the second landing reports what it waits on")
		select {
		case err := <-other:
			require.FailNowf(t, "the landing answered while queued", "%v", err)
		default:
		}
		cancel() // it would otherwise wait for as long as the landing is parked
		err := testkit.Receive(t, other, "the queued landing giving up")
		var we *WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, "the landing lane", we.Waiting)
		assert.Contains(t, we.Holder, "landing Crm@3.0.0")
		assert.ErrorIs(t, err, context.Canceled)

		rel.Release()
		require.NoError(t, testkit.Receive(t, landed, "the released landing finishing"))
	})
}

func TestALandingIsAtomicForConcurrentReaders(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		l := newLanding(t, v, Options{ReadPool: 4})

		const versions, readers = 8, 4
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var reads atomic.Int64
		problems := make(chan error, readers)
		for range readers {
			wg.Go(func() {
				for {
					act, err := l.Activation(ctx)
					if err == nil {
						err = checkComplete(ctx, v, act)
					}
					if err != nil {
						problems <- err
						return
					}
					reads.Add(1)
					select {
					case <-stop:
						return
					default:
					}
				}
			})
		}
		for i := range versions {
			version := fmt.Sprintf("1.%d.0", i)
			// Growing file counts: a reader seeing a torn generation would miss files.
			_, err := l.Land(ctx, "Atomic", version, testkit.ModuleArchive(t, "Atomic", version, 2+i))
			require.NoError(t, err)
			_, err = l.Land(ctx, fmt.Sprintf("Other%d", i), "1.0.0", testkit.ModuleArchive(t, fmt.Sprintf("Other%d", i), "1.0.0", 2))
			require.NoError(t, err)
		}
		close(stop)
		wg.Wait()
		close(problems)
		for err := range problems {
			assert.NoError(t, err, "a reader saw an incomplete state")
		}
		assert.Positive(t, reads.Load())
		final, err := l.Activation(ctx)
		require.NoError(t, err)
		require.NoError(t, checkComplete(ctx, v, final))
		assert.Equal(t, fmt.Sprintf("1.%d.0", versions-1), servedVersions(final)["Atomic"])

		t.Run("negative control: a volume that loses the generation's rename leaves a record whose bytes are missing", func(t *testing.T) {
			v := &lostRename{Volume: DirVolume(t.TempDir())}
			neg := newLanding(t, v, Options{})
			_, err := neg.Land(ctx, "Torn", "1.0.0", testkit.ModuleArchive(t, "Torn", "1.0.0", 3))
			require.NoError(t, err, "the volume reported the rename done")
			act, err := neg.Activation(ctx)
			require.NoError(t, err)
			require.Error(t, checkComplete(ctx, v, act), "the checker must catch a record whose bytes are missing")
		})
	})
}

// lostRename reports the rename of a staged generation into place as done
// without doing it: a record then names bytes that are not there, the torn
// state a landing that recorded before its bytes would leave.
type lostRename struct{ Volume }

func (v *lostRename) Rename(ctx context.Context, oldname, newname string) error {
	if path.Base(path.Dir(newname)) == "generations" {
		return nil
	}
	return v.Volume.Rename(ctx, oldname, newname)
}

func TestTwoReplicasOnOneRootSeeEachOthersRecordsAndTheLatestWins(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		_, handle := k.open(t)
		clk := clock.NewMock()
		clk.Set(time.Time{})
		a := newLanding(t, handle(), Options{Replica: "a", Clock: clk})
		b := newLanding(t, handle(), Options{Replica: "b", Clock: clk})

		// Replica a writes just below a decimal-digit boundary and b just above
		// it: record names without zero padding would sort a's record last and
		// wrongly let it win.
		aTime, bTime := time.Unix(0, 999_999_990), time.Unix(0, 1_000_000_000)
		require.Greater(t, fmt.Sprint(aTime.UnixNano()+1), fmt.Sprint(bTime.UnixNano()),
			"the chosen instants discriminate padded from unpadded names")

		clk.Set(aTime)
		_, err := a.Land(ctx, "Shared", "1.0.0", testkit.ModuleArchive(t, "Shared", "1.0.0", 2))
		require.NoError(t, err)
		seen, err := b.Activation(ctx)
		require.NoError(t, err)
		got, ok := seen.Lookup("shared")
		require.True(t, ok, "replica b sees what replica a landed")
		assert.Equal(t, "a", got.Replica)
		assert.Equal(t, "1.0.0", got.Version)

		clk.Set(bTime)
		_, err = b.Land(ctx, "Shared", "2.0.0", testkit.ModuleArchive(t, "Shared", "2.0.0", 2))
		require.NoError(t, err)
		for name, l := range map[string]*ModuleLanding{"a": a, "b": b} {
			act, err := l.Activation(ctx)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"Shared": "2.0.0"}, servedVersions(act), "replica %s", name)
		}

		clk.Set(bTime.Add(time.Second))
		_, err = a.Uninstall(ctx, "Shared")
		require.NoError(t, err)
		act, err := b.Activation(ctx)
		require.NoError(t, err)
		assert.Empty(t, act.Modules, "b sees a's uninstall")

		clk.Set(bTime.Add(2 * time.Second))
		shelved, err := a.Shelve(ctx, "Shared", "2.0.0")
		require.NoError(t, err, "a can shelve a version b landed: the bytes stay after an uninstall")
		act, err = b.Activation(ctx)
		require.NoError(t, err)
		got, ok = act.Lookup("Shared")
		require.True(t, ok)
		assert.Equal(t, Shelved, got.State)
		assert.Equal(t, shelved.Generation, got.Generation)

		rc, info, err := a.OpenBundle(ctx, "Shared", "2.0.0")
		require.NoError(t, err, "a shelved version is still downloadable")
		_, err = io.Copy(io.Discard, rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.Equal(t, Shelved, info.State)

		clk.Set(bTime.Add(3 * time.Second))
		_, err = b.Remove(ctx, "Shared")
		require.NoError(t, err)
		_, err = a.Shelve(ctx, "Shared", "1.0.0")
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf, "nothing landed before a removal can be shelved again")
		_, _, err = a.OpenBundle(ctx, "Shared", "2.0.0")
		require.ErrorAs(t, err, &nf)
	})
}

func TestADownloadStreamsTheServedVersionAndChecksItsBytes(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		l := newLanding(t, v, Options{})
		v1 := testkit.ModuleArchive(t, "Dl", "1.0.0", 2)
		v2 := testkit.ModuleArchive(t, "Dl", "2.0.0", 2)
		_, err := l.Land(ctx, "Dl", "1.0.0", v1)
		require.NoError(t, err)
		landed, err := l.Land(ctx, "Dl", "2.0.0", v2)
		require.NoError(t, err)

		rc, info, err := l.OpenBundle(ctx, "dl", "2.0.0")
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.Equal(t, v2, got)
		assert.Equal(t, landed.SHA256, info.SHA256)
		assert.Equal(t, int64(len(v2)), info.Size)

		_, _, err = l.OpenBundle(ctx, "Dl", "1.0.0")
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf, "a superseded version is not served")

		// Negative control: the same download over altered bytes must fail.
		tampered := append([]byte(nil), v2...)
		tampered[len(tampered)/2] ^= 0xff
		require.NoError(t, v.WriteFile(ctx, bundlePath("dl", landed.Generation), tampered))
		rc, _, err = l.OpenBundle(ctx, "Dl", "2.0.0")
		require.NoError(t, err)
		_, err = io.ReadAll(rc)
		require.NoError(t, rc.Close())
		var ie *IntegrityError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, landed.SHA256, ie.WantSHA256)
	})
}

func TestLandingsRunOneAtATime(t *testing.T) {
	// highWater lands four versions at once and reports how many were inside
	// the landing at the same moment. The first parks; each other one either
	// joins it inside (lane too wide) or reports that it waits on the lane.
	highWater := func(t *testing.T, capacity int) (int32, []string) {
		ctx := t.Context()
		var inside, high atomic.Int32
		arrived := make(chan string, 4)
		logs, logger := testkit.CaptureLogs()
		rel := testkit.NewReleaser(t)
		pv := &parkingVolume{Volume: DirVolume(t.TempDir()), park: func(ctx context.Context, r Record) {
			n := inside.Add(1)
			for h := high.Load(); n > h && !high.CompareAndSwap(h, n); h = high.Load() {
			}
			arrived <- r.Version
			rel.Wait(ctx)
			inside.Add(-1)
		}}
		l := newLanding(t, pv, Options{Logger: logger})
		if capacity != 1 {
			l.lane = newSlots("the landing lane", capacity, l.done, l.log)
		}

		var done []<-chan error
		done = append(done, landAsync(ctx, l, "Serial", "1.0.0", testkit.ModuleArchive(t, "Serial", "1.0.0", 2)))
		testkit.Receive(t, arrived, "the first landing parking")
		for i := 2; i <= 4; i++ {
			v := fmt.Sprintf("%d.0.0", i)
			done = append(done, landAsync(ctx, l, "Serial", v, testkit.ModuleArchive(t, "Serial", v, 2)))
		}
		var waits []string
		for entered := 0; entered+len(waits) < 3; {
			select {
			case <-arrived:
				entered++
			case r := <-logs.Added:
				if r.Message == WaitingMessage {
					waits = append(waits, r.Attrs["waitingOn"].String())
				}
			case <-time.After(testkit.Bound):
				require.FailNow(t, "a landing neither entered nor queued within the bound")
			}
		}
		rel.Release()
		for _, d := range done {
			require.NoError(t, testkit.Receive(t, d, "a landing finishing"))
		}
		return high.Load(), waits
	}

	high, waits := highWater(t, 1)
	assert.Equal(t, int32(1), high, "no two landings are ever inside at once")
	assert.Equal(t, []string{"the landing lane", "the landing lane", "the landing lane"}, waits)

	t.Run("negative control: a lane of two lets landings overlap", func(t *testing.T) {
		high, _ := highWater(t, 2)
		assert.Equal(t, int32(2), high)
	})
}

func TestGivingUpOnTheLaneOrTheReadPoolNamesWhatWasWaitedOn(t *testing.T) {
	t.Run("the landing lane", func(t *testing.T) {
		ctx := t.Context()
		pv, parked, rel := parkOn(t, DirVolume(t.TempDir()), "1.0.0")
		logger, waitedOn := waitsOn(t)
		l := newLanding(t, pv, Options{Logger: logger})
		first := landAsync(ctx, l, "Lane", "1.0.0", testkit.ModuleArchive(t, "Lane", "1.0.0", 1))
		testkit.Receive(t, parked, "the first landing parking")

		waitCtx, cancel := context.WithCancel(ctx)
		second := landAsync(waitCtx, l, "Lane", "2.0.0", testkit.ModuleArchive(t, "Lane", "2.0.0", 1))
		assert.Equal(t, "the landing lane", waitedOn(0), "the second landing queuing")
		cancel()
		err := testkit.Receive(t, second, "the queued landing giving up")
		var we *WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, "the landing lane", we.Waiting)
		assert.Equal(t, "landing Lane@1.0.0", we.Holder)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "the landing lane")

		rel.Release()
		require.NoError(t, testkit.Receive(t, first, "the first landing finishing"))
		// Control: the same landing with the lane free succeeds, so the
		// error above was the wait and nothing else.
		_, err = l.Land(ctx, "Lane", "2.0.0", testkit.ModuleArchive(t, "Lane", "2.0.0", 1))
		require.NoError(t, err)
	})

	t.Run("the read pool and the volume", func(t *testing.T) {
		ctx := t.Context()
		gv := &testkit.GatedVolume{Volume: DirVolume(t.TempDir()), Dir: modulesDir}
		logger, waitedOn := waitsOn(t)
		l := newLanding(t, gv, Options{ReadPool: 1, Logger: logger})

		gate := testkit.NewReleaser(t)
		entered := gv.Arm(gate)
		firstCtx, cancelFirst := context.WithCancel(ctx)
		defer cancelFirst()
		first := readAsync(firstCtx, l)
		testkit.Receive(t, entered, "the first read reaching the volume")

		secondCtx, cancelSecond := context.WithCancel(ctx)
		second := readAsync(secondCtx, l)
		assert.Equal(t, "the read pool", waitedOn(0), "the second read queuing")
		cancelSecond()
		res := testkit.Receive(t, second, "the queued read giving up")
		var we *WaitError
		require.ErrorAs(t, res.err, &we)
		assert.Equal(t, "the read pool", we.Waiting)
		assert.Equal(t, "activation read", we.Holder)
		assert.ErrorIs(t, res.err, context.Canceled)

		// The first read is held inside a volume operation; ending its
		// context names the volume and the operation.
		cancelFirst()
		res = testkit.Receive(t, first, "the read held by the volume giving up")
		require.ErrorAs(t, res.err, &we)
		assert.Equal(t, "the volume (list modules)", we.Waiting)
		assert.ErrorIs(t, res.err, context.Canceled)

		// Control: with the pool free and the volume answering, the same read succeeds.
		_, err := l.Activation(ctx)
		require.NoError(t, err)
	})
}

func TestAScanCostsOperationsPerModuleNotPerRecord(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		counted, cv := counting(k.openVolume(t))
		l := newLanding(t, counted, Options{})
		scanCost := func(scan func() error) testkit.OpCounts {
			before := cv.Ops()
			require.NoError(t, scan())
			return cv.Ops().Sub(before)
		}
		activation := func() error { _, err := l.Activation(ctx); return err }
		// readEveryRecord is the scan this package must not be: it reads each
		// module's whole history. It serves as the negative control below.
		readEveryRecord := func() error {
			mods, err := cv.ReadDir(ctx, modulesDir)
			if err != nil {
				return err
			}
			for _, m := range mods {
				recs, err := cv.ReadDir(ctx, recordsDir(m.Name()))
				if err != nil {
					return err
				}
				for _, id := range recordIDs(recs) {
					if _, err := cv.ReadFile(ctx, recordsDir(m.Name())+"/"+id+recordSuffix, MaxRecordBytes); err != nil {
						return err
					}
				}
			}
			return nil
		}
		landModules := func(from, to int) {
			for i := from; i < to; i++ {
				m := fmt.Sprintf("Mod%02d", i)
				_, err := l.Land(ctx, m, "1.0.0", testkit.ModuleArchive(t, m, "1.0.0", 1))
				require.NoError(t, err)
			}
		}

		landModules(0, 3)
		cost3 := scanCost(activation)
		landModules(3, 6)
		cost6 := scanCost(activation)
		landModules(6, 9)
		cost9 := scanCost(activation)
		perModule := (cost6.Total() - cost3.Total()) / 3
		assert.Equal(t, cost6.Total()-cost3.Total(), cost9.Total()-cost6.Total(), "each module adds the same cost")
		assert.LessOrEqual(t, perModule, int64(2), "one listing and one record read per module")
		assert.Zero(t, cost9.MkdirAll+cost9.WriteFile+cost9.Rename+cost9.RemoveAll, "a read writes nothing")
		assert.Positive(t, cost9.ReadDir, "the counter counts")

		naiveBefore := scanCost(readEveryRecord)
		for i := range 9 {
			m := fmt.Sprintf("Mod%02d", i)
			for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
				_, err := l.Land(ctx, m, v, testkit.ModuleArchive(t, m, v, 1))
				require.NoError(t, err)
			}
			_, err := l.Shelve(ctx, m, "1.0.0")
			require.NoError(t, err)
		}
		assert.Equal(t, cost9, scanCost(activation), "five records per module cost what one did")
		assert.Greater(t, scanCost(readEveryRecord).Total(), naiveBefore.Total(),
			"negative control: a scan of every record grows with the history the activation ignored")
	})
}

func TestClosingRefusesNewWorkReleasesWaitersAndShutdownWaitsWithinItsBound(t *testing.T) {
	ctx := t.Context()
	pv, parked, rel := parkOn(t, DirVolume(t.TempDir()), "1.0.0")
	logger, waitedOn := waitsOn(t)
	l := newLanding(t, pv, Options{Logger: logger})
	running := landAsync(ctx, l, "Closing", "1.0.0", testkit.ModuleArchive(t, "Closing", "1.0.0", 1))
	testkit.Receive(t, parked, "the running landing parking")
	queued := landAsync(ctx, l, "Closing", "2.0.0", testkit.ModuleArchive(t, "Closing", "2.0.0", 1))
	assert.Equal(t, "the landing lane", waitedOn(0), "the second landing queuing")

	require.NoError(t, l.Close())
	assert.ErrorIs(t, testkit.Receive(t, queued, "the queued landing released by Close"), ErrClosed)
	_, err := l.Activation(ctx)
	assert.ErrorIs(t, err, ErrClosed)

	// Shutdown waits for the parked landing: with its bound already spent it
	// says what it was waiting for.
	spent, cancel := context.WithCancel(ctx)
	cancel()
	err = l.Shutdown(spent)
	var we *WaitError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "running calls to finish (1)", we.Waiting)
	assert.Equal(t, "landing Closing@1.0.0", we.Holder)

	rel.Release()
	require.NoError(t, testkit.Receive(t, running, "the running landing finishing after Close"))
	shut := make(chan error, 1)
	go func() { shut <- l.Shutdown(ctx) }()
	require.NoError(t, testkit.Receive(t, shut, "Shutdown returning once nothing runs"))
}

// Every refusal is an *OptionsError naming the setting (control run: with
// the volume's and the negative values' fmt.Errorf errors back, 7 rows
// failed errors.As).
func TestNewModuleLandingRefusesNonsenseOptions(t *testing.T) {
	for _, c := range []struct {
		setting string
		v       Volume
		opts    Options
	}{
		{"Volume", nil, Options{}},
		{"Options.ReadPool", DirVolume(t.TempDir()), Options{ReadPool: -1}},
		{"Options.MaxArchive", DirVolume(t.TempDir()), Options{MaxArchive: -1}},
		{"Options.MaxEntries", DirVolume(t.TempDir()), Options{MaxEntries: -1}},
		{"Options.MaxFileSize", DirVolume(t.TempDir()), Options{MaxFileSize: -1}},
		{"Options.MaxExpanded", DirVolume(t.TempDir()), Options{MaxExpanded: -1}},
		{"Options.MaxRatio", DirVolume(t.TempDir()), Options{MaxRatio: -1}},
		{"Options.Replica", DirVolume(t.TempDir()), Options{Replica: "../x"}},
	} {
		_, err := NewModuleLanding(c.v, c.opts)
		var bad *OptionsError
		if assert.ErrorAs(t, err, &bad, c.setting) {
			assert.Equal(t, c.setting, bad.Setting)
			assert.Contains(t, err.Error(), c.setting)
		}
	}
	l, err := NewModuleLanding(DirVolume(t.TempDir()), Options{Logger: quietLogger()})
	require.NoError(t, err, "control: zero options take the defaults")
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "closing twice is harmless")
}
