package registry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// noSuchBundle is the one answer for a bundle the caller cannot have:
// absent, not served at that version, an invalid name, or refused by the
// caller's grant. They are byte-identical, so that a download never tells a
// caller what exists beyond what it may pull.
func noSuchBundle() answer.Answer {
	return errorAnswer(http.StatusNotFound, "no such bundle")
}

// downloadRoute serves GET /api/plugins/bundles/{plugin}/{version}:
// authentication, the package catalog and the entitlement check, then the
// authoritative bundle read and the bytes.
//
// Entitlement is decided from the catalog alone, before the volume is
// touched: a package the caller may not have and a package that does not
// exist cost the same work (none on the volume) and get the same bytes, so
// neither the answer nor its timing tells a caller what exists beyond what
// it may pull. A package whose tier this replica does not know is refused
// the same way.
func (s *Server) downloadRoute(r *http.Request) rx.Observable[answer.Answer] {
	ledger := answer.LedgerFrom(r.Context())
	plugin, version := r.PathValue("plugin"), r.PathValue("version")
	hold := bundleHoldFrom(r.Context())
	head := r.Method == http.MethodHead
	return s.authenticated(r, s.downloadBudget, func(res auth.Result) rx.Observable[answer.Answer] {
		// An invalid name never reaches the volume.
		if landing.ValidateModuleName(plugin) != nil || landing.ValidateVersion(version) != nil {
			return rx.Return(noSuchBundle())
		}
		cat := answer.InStage(s.catalog.read(), ledger, StageCatalog)
		return rx.SelectMany(rx.Take(cat, 1), func(c *catalogState) rx.Observable[answer.Answer] {
			pkg := c.lookup(plugin)
			if pkg.unreadable || !res.Allows(s.source, pkg.name, pkg.tier) {
				return rx.Return(noSuchBundle())
			}
			opened := answer.InStage(s.openBundle(hold, plugin, version), ledger, StageBundleRead)
			return rx.Map(rx.Take(opened, 1), func(info *landing.BundleInfo) answer.Answer {
				if info == nil {
					return noSuchBundle()
				}
				a := bundleAnswer(*info, hold)
				if head {
					// net/http drops a HEAD's body: reading the bundle would
					// cost the volume its bytes for nothing. The hold closes it.
					a.Stream = nil
				}
				return a
			})
		})
	})
}

// openBundle opens the bundle authoritatively and parks it in hold. It
// emits the bundle's description, or nil when there is no such bundle.
func (s *Server) openBundle(hold *bundleHold, plugin, version string) rx.Observable[*landing.BundleInfo] {
	return rx.Create(func(ctx context.Context, o rx.Observer[*landing.BundleInfo]) {
		go func() {
			rc, info, err := s.landing.OpenBundle(ctx, plugin, version)
			var notFound *landing.NotFoundError
			var badName *landing.NameError
			switch {
			case errors.As(err, &notFound) || errors.As(err, &badName):
				o.OnNext(nil)
				o.OnCompleted()
				return
			case err != nil:
				o.OnError(err)
				return
			}
			if !hold.put(rc) {
				o.OnError(errors.New("registry: the download was abandoned while its bundle opened"))
				return
			}
			o.OnNext(&info)
			o.OnCompleted()
		}()
	})
}

// bundleAnswer streams the held bundle.
func bundleAnswer(info landing.BundleInfo, hold *bundleHold) answer.Answer {
	h := http.Header{}
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	h.Set("ETag", `"`+info.SHA256+`"`)
	h.Set(client.BundleDigestHeader, info.SHA256)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Content-Disposition", `attachment; filename="`+info.Module+"-"+info.Version+`.zip"`)
	return answer.Answer{Header: h, Stream: hold.stream}
}

// bundleHold owns a download's open bundle from the moment it is opened
// until it is streamed or the request ends, so that a bundle opened for a
// request that was refused, timed out or left is always closed.
type bundleHold struct {
	mu   sync.Mutex
	rc   io.ReadCloser
	done bool
}

type bundleHoldKey struct{}

// withBundleHold gives each download request a hold, released when the
// request's handler returns.
func withBundleHold(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hold := &bundleHold{}
		defer hold.release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bundleHoldKey{}, hold)))
	})
}

func bundleHoldFrom(ctx context.Context) *bundleHold {
	if h, ok := ctx.Value(bundleHoldKey{}).(*bundleHold); ok {
		return h
	}
	return &bundleHold{}
}

// put parks rc; after release it closes rc instead and reports false.
func (h *bundleHold) put(rc io.ReadCloser) bool {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		_ = rc.Close()
		return false
	}
	h.rc = rc
	h.mu.Unlock()
	return true
}

// take hands over the parked bundle; nobody else will close it.
func (h *bundleHold) take() io.ReadCloser {
	h.mu.Lock()
	defer h.mu.Unlock()
	rc := h.rc
	h.rc, h.done = nil, true
	return rc
}

// release closes a bundle that was never streamed.
func (h *bundleHold) release() {
	if rc := h.take(); rc != nil {
		_ = rc.Close()
	}
}

// stream writes the bundle to w.
func (h *bundleHold) stream(w io.Writer) error {
	rc := h.take()
	if rc == nil {
		return errors.New("registry: the bundle was closed before it could be streamed")
	}
	defer rc.Close()
	return copyVerified(w, rc)
}

// copyVerified copies src to w holding back the last chunk read until src
// has reported a clean end. The bundle reader checks size and SHA-256 and
// fails at the end on a mismatch; withholding the last chunk then leaves
// the body short of its Content-Length, so the client cannot take a corrupt
// bundle for a whole one.
func copyVerified(w io.Writer, src io.Reader) error {
	bufs := [2][]byte{make([]byte, 32<<10), make([]byte, 32<<10)}
	var pending []byte // the last chunk read, not yet written; never in bufs[cur]
	cur := 0
	for {
		n, err := src.Read(bufs[cur])
		if err != nil && err != io.EOF {
			return err
		}
		if len(pending) > 0 && (n > 0 || err == io.EOF) {
			if _, werr := w.Write(pending); werr != nil {
				return werr
			}
			pending = nil
		}
		if n > 0 {
			pending = bufs[cur][:n]
			cur ^= 1
		}
		if err == io.EOF {
			if len(pending) > 0 {
				_, werr := w.Write(pending)
				return werr
			}
			return nil
		}
	}
}
