package registry

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// DefaultUploadSlots is how many publications may upload at once when
// ServerOptions.UploadSlots is zero. A publication beyond them is refused
// with 503 and Retry-After at once, before its body is read: uploads cost
// disk and a connection for up to the publish budget each.
const DefaultUploadSlots = 4

// StageUploadSlots names the budget of concurrent uploads in refusals.
const StageUploadSlots = "publish upload slots"

// upload is a publication that passed the gate: authorised, well named,
// and spooled to disk whole.
type upload struct {
	plugin, version string
	tier            string
	spool           *spool
}

type uploadKey struct{}

// publishGate checks a publication before anything is landed: the publish
// token (compared in constant time), the names, a declared Content-Length
// (over MaxPublishBytes is refused before a byte is read), a free upload
// slot (else 503 with Retry-After), and the upload, streamed to a spool file
// within the publish budget and at most MaxPublishBytes. Refusals are
// answered here; an accepted upload goes on to the route.
func (s *Server) publishGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Until the upload is spooled, a refusal reads none of the body.
		refuse := func(a answer.Answer) {
			answer.CloseUnread(w, r)
			writeAnswer(w, a)
		}
		if !s.publishAuthorized(r.Header.Get("Authorization")) {
			a := errorAnswer(http.StatusUnauthorized, "publishing needs the registry's publish token (Authorization: Bearer <token>)")
			a.Header.Set("WWW-Authenticate", "Bearer")
			refuse(a)
			return
		}
		// A query that does not parse in full (a ';', a bad escape) is
		// refused: URL.Query drops the pair it cannot read, and with it a
		// repeated version or the tier.
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			refuse(errorAnswer(http.StatusBadRequest, fmt.Sprintf("registry: the query %q does not parse: %v; give ?version=<v>&tier=<t> separated by '&'", r.URL.RawQuery, err)))
			return
		}
		// A misspelt parameter would be ignored: a tier given as Tier= would
		// land the package in the default tier.
		for k := range q {
			for _, p := range []string{"version", "tier"} {
				if k != p && strings.EqualFold(k, p) {
					refuse(errorAnswer(http.StatusBadRequest, fmt.Sprintf("registry: the parameter %q is not %q; give it in lower case", k, p)))
					return
				}
			}
		}
		// A parameter given twice is ambiguous: taking one of them silently
		// could land a version the publisher did not mean.
		for _, p := range []string{"version", "tier"} {
			if n := len(q[p]); n > 1 {
				refuse(errorAnswer(http.StatusBadRequest, fmt.Sprintf("registry: %s is given %d times; give it once", p, n)))
				return
			}
		}
		up := upload{plugin: r.PathValue("plugin"), version: q.Get("version")}
		up.tier = q.Get("tier")
		if err := landing.ValidateModuleName(up.plugin); err != nil {
			refuse(errorAnswer(http.StatusBadRequest, err.Error()))
			return
		}
		if err := landing.ValidateVersion(up.version); err != nil {
			refuse(errorAnswer(http.StatusBadRequest, err.Error()+" (give it as ?version=)"))
			return
		}
		tier, err := canonicalTier(up.tier)
		if err != nil {
			refuse(errorAnswer(http.StatusBadRequest, err.Error()))
			return
		}
		up.tier = tier
		if r.ContentLength > s.maxPublish {
			a := tooLarge(s.maxPublish)
			refuse(a)
			return
		}
		release, ok := s.takeUploadSlot()
		if !ok {
			noteRefusal(r, StageUploadSlots)
			a := errorAnswer(http.StatusServiceUnavailable,
				fmt.Sprintf("%s: all %d are in use; publish again later", StageUploadSlots, cap(s.uploads)))
			answer.SetRetryAfter(a.Header, 0)
			refuse(a)
			return
		}
		readingBody(w) // spoolUpload bounds the read
		sp, refusal := s.spoolUpload(w, r, release)
		if refusal != nil {
			noteRefusal(r, StageUpload)
			writeAnswer(w, *refusal)
			return
		}
		defer sp.release()
		up.spool = sp
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), uploadKey{}, &up)))
	})
}

// takeUploadSlot takes one of the upload slots without waiting.
func (s *Server) takeUploadSlot() (release func(), ok bool) {
	select {
	case s.uploads <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-s.uploads }) }, true
	default:
		return nil, false
	}
}

func tooLarge(limit int64) answer.Answer {
	return errorAnswer(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("the upload is larger than the %d bytes a bundle may have", limit))
}

// publishAuthorized compares the bearer token with the publish token in
// constant time (over digests, so the length does not leak either).
func (s *Server) publishAuthorized(header string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !mesh.EqualNames(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(s.token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// spoolUpload streams the request body to a spool file, as the ledger stage
// "publish upload", bounded by what is left of the publish budget (a read
// deadline on the connection) and by MaxPublishBytes. Memory stays at one
// copy buffer whatever the upload's size. release gives back the upload
// slot; it runs when the spool is released, or now on a refusal.
//
// An upload that stalls is answered 408 and its connection closed: the
// read deadline is left expired, so the server does not wait on the rest of
// a body that is not coming (clearing it would hold the connection, and a
// graceful shutdown, for as long as the client likes).
func (s *Server) spoolUpload(w http.ResponseWriter, r *http.Request, release func()) (*spool, *answer.Answer) {
	ledger := answer.LedgerFrom(r.Context())
	stage := ledger.Enter(StageUpload)
	defer stage.Finish()
	refuse := func(a answer.Answer) (*spool, *answer.Answer) {
		release()
		return nil, &a
	}
	// The registry's own failure (a missing directory, a full disk): 503
	// with Retry-After, the cause and the spool's path in the log only.
	cannotSpool := func(msg string, err error) answer.Answer {
		s.log.Error(msg, slog.String("dir", s.spoolDir), slog.String("error", err.Error()))
		a := errorAnswer(http.StatusServiceUnavailable, StageUpload+": the registry cannot spool uploads now; publish again later")
		answer.SetRetryAfter(a.Header, 0)
		answer.CloseUnread(w, r) // the rest of the body is not read
		return a
	}
	f, err := os.CreateTemp(s.spoolDir, "meshrx-upload-*.zip")
	if err != nil {
		return refuse(cannotSpool("registry: cannot create an upload spool file", err))
	}
	sp := &spool{f: f, refs: 1, done: release}
	remaining := s.publishBudget - ledger.Elapsed()
	rc := http.NewResponseController(w)
	// The read deadline is wall time: it bounds a blocking read, which no
	// virtual clock can interrupt. Not every ResponseWriter supports it
	// (then the server's ReadTimeout is the bound).
	deadlineSet := rc.SetReadDeadline(time.Now().Add(remaining)) == nil
	n, err := io.Copy(spoolWriter{f}, http.MaxBytesReader(w, r.Body, s.maxPublish))
	if err == nil {
		if deadlineSet {
			_ = rc.SetReadDeadline(time.Time{}) // the body is read: the connection may be reused
		}
		sp.size = n
		return sp, nil
	}
	sp.release()
	var big *http.MaxBytesError
	var write *spoolWriteError
	switch {
	case errors.As(err, &write):
		return nil, ptr(cannotSpool("registry: cannot write an upload to its spool file", write.err))
	case errors.As(err, &big):
		return nil, ptr(tooLarge(big.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		a := errorAnswer(http.StatusRequestTimeout,
			fmt.Sprintf("the upload was not received within the publish budget of %s (waiting on %s)", s.publishBudget, StageUpload))
		a.Header.Set("Connection", "close")
		return nil, &a
	default:
		a := errorAnswer(http.StatusBadRequest, "reading the upload failed: "+err.Error())
		a.Header.Set("Connection", "close")
		return nil, &a
	}
}

func ptr[T any](v T) *T { return &v }

// spoolWriter tells the spool file's write errors (the registry's) from
// the upload's read errors (the publisher's).
type spoolWriter struct{ f *os.File }

func (w spoolWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &spoolWriteError{err: err}
	}
	return n, err
}

// spoolWriteError is a failed write of an upload to its spool file.
type spoolWriteError struct{ err error }

func (e *spoolWriteError) Error() string { return "writing the upload spool: " + e.err.Error() }
func (e *spoolWriteError) Unwrap() error { return e.err }

// spool is an upload on disk, removed when its last holder releases it:
// the gate, and a landing still reading it after its request was answered.
type spool struct {
	f    *os.File
	size int64
	done func() // gives back the upload slot

	mu   sync.Mutex
	refs int
}

// hold takes another reference; false once the spool is gone.
func (sp *spool) hold() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.refs == 0 {
		return false
	}
	sp.refs++
	return true
}

// release drops a reference; the last one closes and removes the file.
func (sp *spool) release() {
	sp.mu.Lock()
	sp.refs--
	last := sp.refs == 0
	sp.mu.Unlock()
	if !last {
		return
	}
	_ = sp.f.Close()
	_ = os.Remove(sp.f.Name())
	sp.done()
}

// publishTarget is the package a publication lands as: its canonical name
// and the tier in effect, or the refusal that ends it.
type publishTarget struct {
	name, tier string
	refusal    *answer.Answer
}

// landing is what the landing did, or the refusal that ended it.
type landOutcome struct {
	rec     landing.Record
	created bool
	refusal *answer.Answer
}

// PublishAnswer is the body of a successful publication: the record of the
// version, the tier its package is served at, and whether this publication
// landed it (201) or found it landed with the same bytes (200).
type PublishAnswer struct {
	landing.Record
	Tier    string `json:"tier"`
	Created bool   `json:"created"`
}

// publishRoute lands an upload that passed the gate:
// POST /api/plugins/bundles/{plugin}?version=V[&tier=T].
//
// A given tier must be one the plan ladder has (else 400 naming the known
// ones) and the archive must pass its checks (else 400) before anything is
// written. The package node is written first, for a package the catalog
// does not have (an existing package, found without regard to case, keeps
// its spelling and its tier): so a bundle becomes visible only once its
// tier is durable, and a publication that fails leaves nothing served. It
// waits (at most catalogCatchUp, and not while the catalog's live query is
// down) until this replica's catalog has the package's tier. The landing
// then goes through Served, which patches the snapshot before it answers, so
// this replica's next index read lists the version — also when
// it answers 200 because the version had landed already with the same bytes
// (perhaps on a replica that died before announcing it): that answer is
// patched in and announced too. Other bytes for a published version are a
// 409 naming its sha256.
//
// The publish budget bounds everything up to the landing's commit point (the
// rename of its record, which makes the version visible): work still short
// of it when the budget runs out is stopped, nothing is served, and the
// answer is 503 with Retry-After. A landing that reached its commit point
// finishes it on a budget of its own (landing.CommitBudget), and the answer
// says what happened, up to that long after the publish budget: a publish
// is never answered 503 while its version lands.
func (s *Server) publishRoute(r *http.Request) rx.Observable[answer.Answer] {
	ledger := answer.LedgerFrom(r.Context())
	up, ok := r.Context().Value(uploadKey{}).(*upload)
	if !ok {
		return rx.Throw[answer.Answer](errors.New("registry: the publish route ran without its gate"))
	}
	// The publish budget, counted from arrival, on the server's clock.
	budgetEnd := ledger.Arrived().Add(s.publishBudget)
	if ledger == nil {
		budgetEnd = s.clk.Now().Add(s.publishBudget)
	}
	withinBudget := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return s.clk.WithDeadline(ctx, budgetEnd)
	}
	target := answer.InStage(background(func(ctx context.Context) (publishTarget, error) {
		ctx, cancel := withinBudget(ctx)
		defer cancel()
		t, err := s.publishTarget(ctx, up)
		if err == nil && t.refusal == nil {
			// This replica's next index read must list what it answers
			// published: its catalog must know the package's tier first.
			s.catalog.knows(ctx, moduleKey(up.plugin))
		}
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("registry: the publish budget of %s ran out while waiting on %s; nothing was published: %w (%w)", s.publishBudget, StagePackageNode, err, ctx.Err())
		}
		return t, err
	}), ledger, StagePackageNode)
	return rx.SelectMany(rx.Take(target, 1), func(t publishTarget) rx.Observable[answer.Answer] {
		if t.refusal != nil {
			return rx.Return(*t.refusal)
		}
		landed := answer.InStage(background(func(ctx context.Context) (landOutcome, error) {
			if !up.spool.hold() {
				return landOutcome{}, errors.New("registry: the upload was released before it could land")
			}
			defer up.spool.release()
			ctx, cancel := withinBudget(ctx)
			defer cancel()
			rec, created, err := s.served.LandArchive(ctx, t.name, up.version, up.spool.f, up.spool.size)
			var unknown *landing.CommitUnknownError
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(err, &unknown) {
				// Stopped short of the commit point: nothing is served.
				err = fmt.Errorf("registry: the publish budget of %s ran out while waiting on %s, before %s@%s was committed; nothing was published: %w (%w)",
					s.publishBudget, StageLanding, t.name, up.version, err, ctx.Err())
			}
			var conflict *landing.VersionConflictError
			var badArchive *landing.ArchiveError
			var badName *landing.NameError
			switch {
			case errors.As(err, &conflict):
				return landOutcome{refusal: ptr(conflictRefusal(conflict))}, nil
			case errors.As(err, &badArchive) || errors.As(err, &badName):
				return landOutcome{refusal: ptr(errorAnswer(http.StatusBadRequest, err.Error()))}, nil
			case errors.As(err, &unknown):
				// The commit may have taken place: a 503 saying so, and
				// that publishing the same bytes again is safe (a version
				// that landed answers with its record).
				return landOutcome{}, answer.RepeatSafe(&mesh.UnavailableError{Op: "land " + t.name + "@" + up.version,
					Err: fmt.Errorf("%w: %w", mesh.ErrOutcomeUnknown, err)})
			case err != nil:
				return landOutcome{}, err
			}
			return landOutcome{rec: rec, created: created}, nil
		}), ledger, StageLanding)
		return rx.Map(rx.Take(landed, 1), func(l landOutcome) answer.Answer {
			if l.refusal != nil {
				return *l.refusal
			}
			status := http.StatusOK
			if l.created {
				status = http.StatusCreated
			}
			a := jsonAnswer(status, PublishAnswer{Record: l.rec, Tier: t.tier, Created: l.created})
			a.Header.Set("Location", client.BundlesPath+"/"+url.PathEscape(l.rec.Module)+"/"+url.PathEscape(l.rec.Version))
			return a
		})
	})
}

// publishTarget checks the tier and the archive and makes the package's
// node durable. The package's identity is one node at a path decided by its
// name folded (packageNodePath), created create-only (PutIfVersion at
// version 0): of concurrent first publications, from any replica and in any
// spelling, exactly one creates it and so decides the spelling and the
// tier; the others find it and publish under what it says. Finding it is a
// point read, never a read of every package: the cost of a publication does
// not grow with the catalog. A package whose node was written elsewhere
// under another path (by hand, or before package nodes were created
// create-only) is found through the catalog and read back by its own path,
// authoritatively.
func (s *Server) publishTarget(ctx context.Context, up *upload) (publishTarget, error) {
	if !up.spool.hold() {
		return publishTarget{}, errors.New("registry: the upload was released before it could be checked")
	}
	defer up.spool.release()
	if up.tier != "" {
		known, err := (&auth.Instances{Mesh: s.mesh, Clock: s.clk}).KnownPlans(ctx)
		if err != nil {
			return publishTarget{}, err
		}
		if !slices.Contains(known, up.tier) {
			return publishTarget{refusal: ptr(unknownTierRefusal(up.tier, known))}, nil
		}
	}
	if err := s.landing.CheckArchive(up.spool.f, up.spool.size); err != nil {
		return publishTarget{refusal: ptr(errorAnswer(http.StatusBadRequest, err.Error()))}, nil
	}
	failed := func(err error) (publishTarget, error) {
		return publishTarget{}, fmt.Errorf("registry: reading the package node before publishing %s@%s failed; nothing was published: %w", up.plugin, up.version, err)
	}
	found := func(n mesh.Node) (publishTarget, error) {
		p, err := decodePackage(n)
		if err != nil {
			// Its bundles are served to nobody until the node is fixed;
			// publishing more of them would only hide that.
			return publishTarget{refusal: ptr(errorAnswer(http.StatusConflict,
				fmt.Sprintf("the package node %s cannot be used (%v); fix or remove it before publishing", n.Path, err)))}, nil
		}
		return publishTarget{name: p.name, tier: p.tier}, nil
	}

	// A node the catalog knows under another path: a package written
	// before (or beside) the create-only node.
	st, err := rx.First(ctx, s.catalog.read())
	if err != nil {
		return failed(err)
	}
	canonical := packageNodePath(s.source, up.plugin)
	if p, ok := st.packages.get(moduleKey(up.plugin)); ok {
		if len(p.dups) > 1 {
			return publishTarget{refusal: ptr(errorAnswer(http.StatusConflict,
				fmt.Sprintf("the package nodes %s name one package (names are compared without case); remove all but one before publishing", strings.Join(p.dups, " and "))))}, nil
		}
		if p.path != canonical {
			n, present, err := s.getNode(ctx, p.path)
			if err != nil {
				return failed(err)
			}
			if present {
				return found(n)
			}
		}
	}
	n, present, err := s.getNode(ctx, canonical)
	if err != nil {
		return failed(err)
	}
	if present {
		return found(n)
	}
	name, err := s.landing.Spelling(ctx, up.plugin)
	if err != nil {
		return publishTarget{}, err
	}
	content, _ := json.Marshal(PackageContent{Tier: up.tier})
	n = mesh.Node{Path: canonical, NodeType: PackageNodeType, Name: name, Content: content}
	_, err = s.mesh.PutIfVersion(ctx, n, 0)
	var lost *mesh.VersionConflictError
	switch {
	case errors.As(err, &lost):
		// Another publication created it first: its spelling and tier
		// stand.
		n, present, err := s.getNode(ctx, canonical)
		if err != nil {
			return failed(err)
		}
		if !present {
			return publishTarget{refusal: ptr(errorAnswer(http.StatusConflict,
				fmt.Sprintf("the package node %s was created and removed while %s@%s was being published; publish it again", canonical, up.plugin, up.version)))}, nil
		}
		return found(n)
	case errors.Is(err, mesh.ErrOutcomeUnknown):
		// Answered 503 saying so and that repeating is safe
		// (answer.ReasonOutcomeUnknownRepeatSafe): publishing again finds
		// the node if it was written, and its tier stands.
		return publishTarget{}, answer.RepeatSafe(fmt.Errorf("registry: the package node of %s may have been written (its answer did not come); nothing was published, publish it again: %w", name, err))
	case err != nil:
		return publishTarget{}, fmt.Errorf("registry: writing the package node of %s failed; nothing was published, publish it again: %w", name, err)
	}
	return publishTarget{name: name, tier: up.tier}, nil
}

// packageNodePath is where a publication creates the node of plugin: its
// name folded (mesh.FoldName), so that every spelling of one package meets
// at one path. The node's Name keeps the spelling.
func packageNodePath(source, plugin string) string {
	return mesh.JoinPath(source, moduleKey(plugin))
}

// getNode reads the node at path: present is false when there is none.
func (s *Server) getNode(ctx context.Context, path string) (n mesh.Node, present bool, err error) {
	nodes, err := rx.Collect(ctx, rx.Take(s.mesh.Get(path), 1))
	if err != nil || len(nodes) == 0 {
		return mesh.Node{}, false, err
	}
	return nodes[0], true, nil
}

// publishAnswerMargin is what the publish route's answer may take past the
// publish budget and a commit's own budget (landing.CommitBudget): the
// answer's own work once the landing has returned.
const publishAnswerMargin = time.Second

// publishAnswerBudget bounds a publication's answer: its publish budget,
// then a commit in progress at its end, then the answer itself.
func (s *Server) publishAnswerBudget() time.Duration {
	return s.publishBudget + landing.CommitBudget + publishAnswerMargin
}

// background runs work on its own goroutine, bounded by the subscription:
// unsubscribing cancels its context.
func background[T any](work func(ctx context.Context) (T, error)) rx.Observable[T] {
	return rx.Create(func(ctx context.Context, o rx.Observer[T]) {
		go func() {
			v, err := work(ctx)
			if err != nil {
				o.OnError(err)
				return
			}
			o.OnNext(v)
			o.OnCompleted()
		}()
	})
}

// writeAnswer writes a an answer outside a Deadline.
func writeAnswer(w http.ResponseWriter, a answer.Answer) {
	h := w.Header()
	for k, vs := range a.Header {
		h[k] = append([]string(nil), vs...)
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	// A write error means the client has gone; there is nobody to tell.
	_, _ = w.Write(a.Body)
}
