package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/mcpserver"
)

const mcpUsage = "usage: herald mcp [--api-url URL] [--workspace ID] [--allow-private] [--log-level debug|info|warn|error]\n" +
	"       (HERALD_API_KEY is required; HERALD_API_URL defaults to http://127.0.0.1:8080)"

// usageError is a mistake in how the command was invoked: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// cmdMCP is `herald mcp`: the connector's tools served over stdio for a local AI host, each tool
// a /v1 request sent to a Herald server with the API key from the environment. Stdout carries
// MCP messages only; logs go to stderr and never name the key.
func cmdMCP(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	apiURL := fs.String("api-url", envOr("HERALD_API_URL", "http://127.0.0.1:8080"), "base URL of the Herald server")
	workspace := fs.String("workspace", os.Getenv("HERALD_WORKSPACE"), "the workspace the tools act in (main or a workspace's id; default: the key's own workspace, else main)")
	allowPrivate := fs.Bool("allow-private", false, "let upload_media fetch URLs on loopback and private addresses, over http and any port (development)")
	logLevel := fs.String("log-level", envOr("HERALD_LOG_LEVEL", "info"), "debug, info, warn or error")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return &usageError{fmt.Sprintf("%v\n%s", err, mcpUsage)}
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q\n%s", rest[0], mcpUsage)}
	}
	base, err := checkAPIURL(*apiURL)
	if err != nil {
		return &usageError{err.Error()}
	}
	key := strings.TrimSpace(os.Getenv("HERALD_API_KEY"))
	if key == "" {
		return &usageError{"HERALD_API_KEY is not set: set it to an API key of the Herald server (herald keys create, or the dashboard's Developer page)"}
	}
	log, err := newLogger("text", *logLevel, stderr)
	if err != nil {
		return &usageError{err.Error()}
	}

	tools := mcpserver.NewTools(mcpserver.ToolsConfig{
		API:        &mcpserver.Remote{BaseURL: base, Key: key, Workspace: strings.TrimSpace(*workspace), Client: &http.Client{Timeout: 5 * time.Minute}},
		Egress:     webhook.NewGuard(webhook.EgressOptions{AllowPrivate: *allowPrivate, AttemptTimeout: time.Minute}),
		LocalFiles: true,
		Log:        log,
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("herald mcp: serving the connector's tools over stdio", "api_url", base, "workspace", strings.TrimSpace(*workspace), "allow_private", *allowPrivate)
	err = tools.Server().Run(ctx, &mcp.StdioTransport{})
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, context.Canceled), errors.Is(err, mcp.ErrConnectionClosed):
		log.Info("herald mcp: stdin closed, exiting")
		return nil
	}
	return err
}

// checkAPIURL validates the server's base URL and returns it without a trailing slash.
func checkAPIURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--api-url (HERALD_API_URL) %q: must be an http or https URL such as http://127.0.0.1:8080", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("--api-url (HERALD_API_URL): must not hold credentials; the key goes in HERALD_API_KEY")
	}
	return strings.TrimRight(u.String(), "/"), nil
}
