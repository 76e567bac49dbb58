package auth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh/memstore"
)

// From an empty mesh to a request that is allowed: write the plan ladder
// (Register refuses a plan the ladder does not have, and a plan-scoped grant
// entry licenses nothing without it), register an instance on a plan, grant
// it packages, issue its key, and guard a handler with Middleware. The
// handler asks the request's Result whether it Allows a package.
func Example() {
	ctx := context.Background()
	store, err := memstore.New(memstore.Options{GatedTypes: auth.SecurityTypes()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	instances := &auth.Instances{Mesh: store}

	// 1. The plan ladder: the step a newcomer misses.
	for _, tier := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 2}} {
		if err := instances.SetPlanTier(ctx, tier); err != nil {
			fmt.Println(err)
			return
		}
	}
	// 2. An instance on the free plan, granted Plugins up to pro.
	if _, err := instances.Register(ctx, "acme-prod", "Acme production", "free"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := instances.SetGrant(ctx, "acme-prod", "ops@acme", "Plugins/*@pro"); err != nil {
		fmt.Println(err)
		return
	}
	// 3. Its key: shown once, stored only as a hash.
	key, err := instances.IssueKey(ctx, "acme-prod")
	if err != nil {
		fmt.Println(err)
		return
	}

	// 4. The guard, and a handler that asks Allows.
	authn := &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store}}
	srv := httptest.NewServer(auth.Middleware(authn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := auth.FromContext(r.Context())
		fmt.Fprintf(w, "free-tier package: %v, pro-tier package: %v",
			res.Allows("Plugins", "charts", "free"), res.Allows("Plugins", "charts", "pro"))
	})))
	defer srv.Close()

	for _, header := range []string{"Bearer " + key, ""} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body = nil // the refusal's JSON body is not the point here
		}
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 200 free-tier package: true, pro-tier package: false
	// 401
}

// Require is the guard in the form middleware chains compose,
// func(http.Handler) http.Handler: here after a middleware that tags each
// request, in front of an API handler on a plain net/http mux. A request
// without a key is refused before it reaches the handler.
func ExampleRequire() {
	store, err := memstore.New(memstore.Options{GatedTypes: auth.SecurityTypes()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	authn := &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store}}
	tagged := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Served-By", "example")
			next.ServeHTTP(w, r)
		})
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := auth.FromContext(r.Context()) // the instance the key resolved to
		fmt.Fprintln(w, "hello", res.Instance.ID)
	})

	mux := http.NewServeMux()
	mux.Handle("/api/", tagged(auth.Require(authn)(api)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/api/hello") // no Authorization header
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Served-By"))
	// Output: 401 example
}
