package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// How the bell knows who is looking. The example issues one random token
// per demo user when it starts and prints a sign-in link per user; nothing
// else grants a session. A viewer signs in by opening the link, which sets
// a session cookie (HMAC-signed by a key made at start, HttpOnly,
// SameSite=Strict) and redirects to the page; a program sends the token as
// Authorization: Bearer. Every route that reads or writes a bell acts as
// the signed-in user only: there is no ?viewer= to choose another.
const (
	sessionCookie  = "bell_session"
	sessionTTL     = 12 * time.Hour
	maxFormBytes   = 64 << 10         // a /send or /read form
	formReadBudget = 10 * time.Second // its body arriving
)

// demoUsers are the users the example issues tokens to: the only viewers,
// senders and recipients it knows.
var demoUsers = []string{"alice", "bob", demoAdmin}

// accounts holds the users' tokens and the key that signs sessions.
type accounts struct {
	tokens  map[string]string // user → token
	digests []tokenDigest     // every user's token digest, made once: compared on each Bearer request
	key     []byte
	now     func() time.Time
}

// tokenDigest is a user's token's SHA-256. Made per request for every
// user, the digests cost a load run's POST (11,000 users) ≈ 3 ms of the
// bell's CPU; kept, a request hashes only its own token.
type tokenDigest struct {
	user string
	sum  [sha256.Size]byte
}

// newAccounts issues a fresh random token to each user and makes a session
// key: a restart signs every session out.
func newAccounts(users []string) (*accounts, error) {
	a := &accounts{tokens: map[string]string{}, key: make([]byte, 32), now: time.Now}
	if _, err := rand.Read(a.key); err != nil {
		return nil, fmt.Errorf("making the session key: %w", err)
	}
	for _, u := range users {
		tok := make([]byte, 24)
		if _, err := rand.Read(tok); err != nil {
			return nil, fmt.Errorf("issuing a token: %w", err)
		}
		a.tokens[u] = base64.RawURLEncoding.EncodeToString(tok)
	}
	// From the tokens held, once all are issued: a user named twice keeps
	// the last token only, and a replaced one's digest would still sign in.
	for u, tok := range a.tokens {
		a.digests = append(a.digests, tokenDigest{user: u, sum: sha256.Sum256([]byte(tok))})
	}
	return a, nil
}

// users returns the known users, sorted.
func (a *accounts) users() []string {
	out := make([]string, 0, len(a.tokens))
	for u := range a.tokens {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// sample names up to n users, and how many more there are: an error
// message stays short when a load run made thousands.
func (a *accounts) sample(n int) string {
	users := a.users()
	if len(users) <= n {
		return strings.Join(users, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(users[:n], ", "), len(users)-n)
}

// known reports whether user is one of the example's users (ASCII case
// folded, the name rule), and returns its own spelling.
func (a *accounts) known(user string) (string, bool) {
	for u := range a.tokens {
		if mesh.EqualNames(u, user) && isASCII(user) {
			return u, true
		}
	}
	return "", false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// byToken returns the user a token was issued to, comparing digests in
// constant time against every user's token.
func (a *accounts) byToken(token string) (string, bool) {
	got := sha256.Sum256([]byte(token))
	found := ""
	for i := range a.digests {
		if subtle.ConstantTimeCompare(got[:], a.digests[i].sum[:]) == 1 {
			found = a.digests[i].user
		}
	}
	return found, found != "" && token != ""
}

// session returns a signed session value for user: user.expiry.signature.
func (a *accounts) session(user string) string {
	exp := strconv.FormatInt(a.now().Add(sessionTTL).Unix(), 10)
	return user + "." + exp + "." + a.sign(user+"."+exp)
}

func (a *accounts) sign(s string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// verify returns the user of a session value with a valid signature that
// has not expired.
func (a *accounts) verify(v string) (string, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return "", false
	}
	body, sig := v[:i], v[i+1:]
	if !hmac.Equal([]byte(sig), []byte(a.sign(body))) {
		return "", false
	}
	user, exp, ok := strings.Cut(body, ".")
	if !ok {
		return "", false
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || a.now().Unix() > n {
		return "", false
	}
	if _, known := a.tokens[user]; !known {
		return "", false
	}
	return user, true
}

// how a request was authenticated.
type authMethod int

const (
	noAuth authMethod = iota
	bearerAuth
	cookieAuth
	twoAuths // more than one Authorization header: acts for nobody (see ambiguous)
)

// ambiguous answers a request with more than one Authorization header: 400,
// never read as one of them (a proxy in front may have checked another).
func ambiguous(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusBadRequest, fmt.Sprintf("send one Authorization header, not %d", len(r.Header.Values("Authorization"))))
}

// who returns the signed-in user of r: by a Bearer token, else by the
// session cookie.
func (a *accounts) who(r *http.Request) (string, authMethod) {
	if len(r.Header.Values("Authorization")) > 1 {
		return "", twoAuths
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(h), " ")
		if mesh.EqualNames(scheme, "Bearer") {
			if u, ok := a.byToken(strings.TrimSpace(tok)); ok {
				return u, bearerAuth
			}
		}
		return "", noAuth // a wrong token is not rescued by a cookie
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if u, ok := a.verify(c.Value); ok {
			return u, cookieAuth
		}
	}
	return "", noAuth
}

// sameOrigin reports whether a state-changing request carried by a cookie
// comes from the bell's own page: its Origin is this server's, or (a
// browser that sends no Origin) Sec-Fetch-Site says same-origin. A request
// that says neither is refused: the page's fetches always send Origin.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host && u.Path == ""
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// login signs a viewer in with a token from the link the example printed:
// GET /login?token=T sets the session cookie and redirects to the page. A
// login started from another site (Sec-Fetch-Site: cross-site or
// same-site) is refused, so no page can sign a visitor in as someone else.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" {
		writeError(w, http.StatusForbidden, "sign in by opening the link the bell printed, not from another site")
		return
	}
	user, ok := s.accounts.byToken(r.FormValue("token"))
	if !ok {
		writeError(w, http.StatusUnauthorized, "that sign-in link is not valid (the bell prints new links each time it starts)")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.accounts.session(user), Path: "/",
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// whoami answers the signed-in user, or 401.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	user, how := s.accounts.who(r)
	if how == twoAuths {
		ambiguous(w, r)
		return
	}
	if how == noAuth {
		writeError(w, http.StatusUnauthorized, "not signed in: open a sign-in link the bell printed when it started")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"viewer": user, "users": s.accounts.users()})
}

// signedIn runs next with the signed-in user. It answers 401 without one,
// 400 for more than one Authorization header, 403 for a ?viewer= naming
// someone else (there is no choosing), 403 for a state-changing request
// carried by the session cookie from another origin (CSRF), and 400 for a
// form field other than "to" given more than once.
func (s *server) signedIn(next func(w http.ResponseWriter, r *http.Request, user string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, how := s.accounts.who(r)
		if how == twoAuths {
			ambiguous(w, r)
			return
		}
		if how == noAuth {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bell"`)
			writeError(w, http.StatusUnauthorized, "not signed in: open a sign-in link the bell printed when it started, or send Authorization: Bearer <token>")
			return
		}
		for _, v := range r.URL.Query()["viewer"] { // every one: the first is not the only one a client meant
			if v = strings.TrimSpace(v); v != "" && v != user {
				writeError(w, http.StatusForbidden, fmt.Sprintf("signed in as %s: a viewer sees only their own bell", user))
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if how == cookieAuth && !sameOrigin(r) {
				writeError(w, http.StatusForbidden, "cross-origin request refused: the bell acts only for its own page")
				return
			}
			// A form is small and arrives promptly: a slow or huge body
			// holds no connection and no memory.
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(formReadBudget))
			// Parsed here, not by FormValue, which drops the error: a form
			// cut at the limit, or one that does not decode, would be
			// acted on with its fields missing.
			err := r.ParseForm()
			if err == nil {
				if err = r.ParseMultipartForm(maxFormBytes); errors.Is(err, http.ErrNotMultipart) {
					err = nil
				}
			}
			if err != nil {
				if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
					writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is larger than %d KiB", maxFormBytes>>10))
					return
				}
				writeError(w, http.StatusBadRequest, "invalid form: "+err.Error())
				return
			}
			// A field is read as its first value (FormValue): one given
			// twice would be acted on with the other dropped. Only "to"
			// holds several, and every one counts.
			for k, vs := range r.Form {
				if len(vs) > 1 && k != "to" {
					writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid form: field %q is given %d times (in the body and the query together); give it once", k, len(vs)))
					return
				}
			}
		}
		next(w, r, user)
	}
}
