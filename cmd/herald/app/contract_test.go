package app_test

import (
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
)

func TestPanicsBecome500WithoutStack(t *testing.T) {
	t.Parallel()
	srv := server.New(server.Config{Log: discardLog()})
	srv.Echo.GET("/boom", func(c *echo.Context) error { panic("kaboom at line 42") })
	rec := newRecorder()
	srv.Echo.ServeHTTP(rec, mustRequest("GET", "/boom"))
	require.Equal(t, 500, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, `"code":"internal_error"`)
	require.NotContains(t, body, "kaboom")
	require.NotContains(t, body, "goroutine")
	require.NotEmpty(t, rec.Header().Get("X-Request-Id"))
}

func TestMetricsExposeRouteTemplatesAndActorKinds(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	id := b.createPost("m", b.accounts[0])
	b.do("GET", "/v1/posts/"+id, nil)
	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, `herald_http_requests_total{method="GET",route="/v1/posts/:id",status="200"} 1`)
	require.Contains(t, text, `herald_actor_messages_total{actor_kind="post",message_type="post.Create"} 1`)
	require.Contains(t, text, `herald_actors_live{actor_kind="post"}`)
	require.Contains(t, text, `herald_bbolt_commit_batch_size_bucket`)
	require.NotContains(t, text, id, "no ids in labels")
}
