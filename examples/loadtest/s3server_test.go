package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -s3-server serves the test S3 server until its context ends and prints
// the -volumes URL another process reaches it with: a listing of the
// bucket at that endpoint answers 200 while it runs; once the context
// ends run returns and the endpoint refuses connections (the control:
// the same request, answered before, fails after).
func TestTheS3ServerModeServesTheBucketUntilInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-s3-server"}, pw, io.Discard)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`-volumes 'dir,s3://meshrx-loadtest/loadtest\?endpoint=(http://127\.0\.0\.1:\d+)&region=[\w-]+' with AWS_ACCESS_KEY_ID=\S+ AWS_SECRET_ACCESS_KEY=\S+`).FindStringSubmatch(line)
	require.NotNil(t, m, line)

	c := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true}}
	list := func() (*http.Response, error) {
		return c.Get(m[1] + "/meshrx-loadtest?list-type=2&prefix=loadtest/")
	}
	resp, err := list()
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(bound):
		t.Fatalf("-s3-server did not return within %v of its context's end", bound)
	}
	_, err = list()
	assert.Error(t, err, "control: the endpoint answered above; once stopped it refuses")
}
