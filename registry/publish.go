package registry

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// upload is a publication that passed the gate: authorised, well named,
// and read whole.
type upload struct {
	plugin, version string
	tier            string
	tierGiven       bool
	archive         []byte
}

type uploadKey struct{}

// refusedWith is an error answered with a given status (see Deadline).
type refusedWith struct {
	status int
	err    error
}

func (e *refusedWith) Error() string   { return e.err.Error() }
func (e *refusedWith) Unwrap() error   { return e.err }
func (e *refusedWith) HTTPStatus() int { return e.status }

// publishGate checks a publication before anything is landed: the publish
// token (compared in constant time), the names, and the upload, read whole
// within the publish budget and at most MaxPublishBytes. Refusals are
// answered here; an accepted upload goes on to the route.
func (s *Server) publishGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.publishAuthorized(r.Header.Get("Authorization")) {
			a := errorAnswer(http.StatusUnauthorized, "publishing needs the registry's publish token (Authorization: Bearer <token>)")
			a.Header.Set("WWW-Authenticate", "Bearer")
			writeAnswer(w, a)
			return
		}
		q := r.URL.Query()
		up := upload{plugin: r.PathValue("plugin"), version: q.Get("version")}
		up.tier, up.tierGiven = q.Get("tier"), q.Has("tier")
		if err := ValidateModuleName(up.plugin); err != nil {
			writeAnswer(w, errorAnswer(http.StatusBadRequest, err.Error()))
			return
		}
		if err := ValidateVersion(up.version); err != nil {
			writeAnswer(w, errorAnswer(http.StatusBadRequest, err.Error()+" (give it as ?version=)"))
			return
		}
		tier, err := canonicalTier(up.tier)
		if err != nil {
			writeAnswer(w, errorAnswer(http.StatusBadRequest, err.Error()))
			return
		}
		up.tier = tier
		archive, refusal := s.readUpload(w, r)
		if refusal != nil {
			noteRefusal(r, StageUpload)
			writeAnswer(w, *refusal)
			return
		}
		up.archive = archive
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), uploadKey{}, &up)))
	})
}

// publishAuthorized compares the bearer token with the publish token in
// constant time (over digests, so the length does not leak either).
func (s *Server) publishAuthorized(header string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(s.token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// readUpload reads the request body whole, as the ledger stage "publish
// upload", bounded by what is left of the publish budget (a read deadline
// on the connection) and by MaxPublishBytes.
func (s *Server) readUpload(w http.ResponseWriter, r *http.Request) ([]byte, *Answer) {
	ledger := LedgerFrom(r.Context())
	stage := ledger.Enter(StageUpload)
	defer stage.Finish()
	remaining := s.publishBudget - ledger.Elapsed()
	rc := http.NewResponseController(w)
	// The read deadline is wall time: it bounds a blocking read, which no
	// virtual clock can interrupt. Not every ResponseWriter supports it
	// (then the server's ReadTimeout is the bound).
	if err := rc.SetReadDeadline(time.Now().Add(remaining)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxPublish))
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	var a Answer
	switch {
	case errors.As(err, &tooLarge):
		a = errorAnswer(http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the upload is larger than the %d bytes a bundle may have", tooLarge.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		a = errorAnswer(http.StatusRequestTimeout,
			fmt.Sprintf("the upload was not received within the publish budget of %s (waiting on %s)", s.publishBudget, StageUpload))
	default:
		a = errorAnswer(http.StatusBadRequest, "reading the upload failed: "+err.Error())
	}
	return nil, &a
}

// publishRoute lands an upload that passed the gate and records its
// package node: POST /api/plugins/bundles/{plugin}?version=V[&tier=T].
// The landing goes through Served, which invalidates the snapshot before it
// answers, so this replica's next index read lists the new version.
func (s *Server) publishRoute(r *http.Request) rx.Observable[Answer] {
	ledger := LedgerFrom(r.Context())
	up, ok := r.Context().Value(uploadKey{}).(*upload)
	if !ok {
		return rx.Throw[Answer](errors.New("registry: the publish route ran without its gate"))
	}
	landed := InStage(background(func(ctx context.Context) (Record, error) {
		rec, err := s.served.Land(ctx, up.plugin, up.version, up.archive)
		var badArchive *ArchiveError
		var badName *NameError
		if errors.As(err, &badArchive) || errors.As(err, &badName) {
			return rec, &refusedWith{status: http.StatusBadRequest, err: err}
		}
		return rec, err
	}), ledger, StageLanding)
	return rx.SelectMany(rx.Take(landed, 1), func(rec Record) rx.Observable[Answer] {
		node := InStage(s.writePackageNode(rec, up), ledger, StagePackageNode)
		return rx.Map(rx.Take(node, 1), func(struct{}) Answer {
			a := jsonAnswer(http.StatusCreated, rec)
			a.Header.Set("Location", BundlesPath+"/"+url.PathEscape(rec.Module)+"/"+url.PathEscape(rec.Version))
			return a
		})
	})
}

// writePackageNode records the package in the catalog: with the tier the
// publication gave, or, when it gave none, the baseline for a package the
// catalog does not know yet (an existing package keeps its tier, so that
// republishing never widens a licence by accident).
func (s *Server) writePackageNode(rec Record, up *upload) rx.Observable[struct{}] {
	path := mesh.JoinPath(s.source, rec.Module)
	return background(func(ctx context.Context) (struct{}, error) {
		if !up.tierGiven {
			_, err := rx.First(ctx, s.mesh.Get(path))
			switch {
			case err == nil:
				return struct{}{}, nil
			case !errors.Is(err, rx.ErrEmpty):
				return struct{}{}, landedButNot(rec, "reading its package node", err)
			}
		}
		content, _ := json.Marshal(PackageContent{Tier: up.tier})
		n := mesh.Node{Path: path, NodeType: PackageNodeType, Name: rec.Module, Content: content}
		if _, err := s.mesh.Put(ctx, n); err != nil {
			return struct{}{}, landedButNot(rec, "writing its package node", err)
		}
		return struct{}{}, nil
	})
}

func landedButNot(rec Record, what string, err error) error {
	return fmt.Errorf("registry: %s@%s landed (generation %s) but %s failed; publish it again: %w",
		rec.Module, rec.Version, rec.Generation, what, err)
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
func writeAnswer(w http.ResponseWriter, a Answer) {
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
