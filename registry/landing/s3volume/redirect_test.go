package s3volume

import (
	"io/fs"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/landing"
)

// A volume Open builds follows no redirect: a write answered 302 is an
// *Error with that status, and nothing is taken for written. The plain
// http.Client Open gave the SDK followed it as a GET (the Go client turns
// a redirected PUT into one), whose 200 the SDK read as the PUT's: a
// WriteFile and a CreateExclusive (a version's claim) succeeded having
// written nothing; a 307 to another host would have taken the request, and
// a session token with it, there. Negative control, run by hand: with
// Open's client following redirects, both writes returned nil and the
// objects did not exist.
func TestAWriteAnsweredWithARedirectIsAnErrorNotASuccess(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	srv := s3test.Start(t)
	ctx := t.Context()
	v, err := Open(ctx, srv.VolumeURL("p"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = v.Close() })
	require.NoError(t, v.WriteFile(ctx, "here", []byte("x")))

	srv.Intercept(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodPut {
			http.Redirect(w, r, "/"+srv.Bucket+"/p/here", http.StatusFound)
			return
		}
		next.ServeHTTP(w, r)
	})
	for op, write := range map[string]func(name string) error{
		"WriteFile":       func(name string) error { return v.WriteFile(ctx, name, []byte("y")) },
		"CreateExclusive": func(name string) error { return v.CreateExclusive(ctx, name, []byte("y")) },
	} {
		err := write(op)
		var se *Error
		if assert.ErrorAs(t, err, &se, op) {
			assert.Equal(t, http.StatusFound, se.Status, op)
			assert.Equal(t, "p/"+op, se.Key, op)
		}
		assert.False(t, landing.IsUnavailable(err), "%s: a redirect is the store's answer, not an outage: %v", op, err)
		_, err = v.Stat(ctx, op)
		assert.ErrorIs(t, err, fs.ErrNotExist, "%s: nothing was written", op)
	}
}
