package s3test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server honours If-None-Match: * on PutObject as AWS S3 documents it:
// 412 when the key exists, and the object keeps its first body. Negative
// control: the same PUT without the header overwrites.
func TestTheServerRefusesAConditionalCreateOfAnExistingKey(t *testing.T) {
	srv := Start(t)
	c := srv.Client()
	ctx := t.Context()
	put := func(body string, conditional bool) error {
		in := &s3.PutObjectInput{Bucket: &srv.Bucket, Key: aws.String("claims/x"), Body: strings.NewReader(body)}
		if conditional {
			in.IfNoneMatch = aws.String("*")
		}
		_, err := c.PutObject(ctx, in)
		return err
	}
	get := func() string {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &srv.Bucket, Key: aws.String("claims/x")})
		require.NoError(t, err)
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.NoError(t, put("first", true), "a conditional create of a new key succeeds")
	err := put("second", true)
	var re *smithyhttp.ResponseError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, 412, re.HTTPStatusCode())
	assert.Equal(t, "first", get())

	require.NoError(t, put("third", false))
	assert.Equal(t, "third", get(), "negative control: an unconditional PUT overwrites")
}

// A stalled server holds requests until Resume; a stopped one refuses
// them until Restart, and keeps its objects.
func TestAStalledServerHoldsRequestsAndAStoppedOneKeepsItsObjects(t *testing.T) {
	srv := Start(t)
	ctx := t.Context()
	require.NoError(t, srv.Ping(ctx))
	entered := srv.Stall()
	done := make(chan error, 1)
	go func() { done <- srv.Ping(ctx) }()
	<-entered
	select {
	case err := <-done:
		t.Fatalf("a stalled server answered: %v", err)
	default:
	}
	srv.Resume()
	require.NoError(t, <-done)

	_, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &srv.Bucket, Key: aws.String("k"), Body: strings.NewReader("v")})
	require.NoError(t, err)
	srv.Stop()
	require.Error(t, srv.Ping(ctx))
	require.NoError(t, srv.Restart())
	_, err = srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: &srv.Bucket, Key: aws.String("k")})
	require.NoError(t, err)
}
