// Command herald is Herald's one binary: the API server (serve), the network simulator (sim),
// user, key and account management (users, keys, accounts), backups (backup), the database
// file's check (check), the bench suite (bench) and the MCP tools over stdio for a local AI host
// (mcp).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `herald — a self-hostable social publishing API server

Usage:
  herald serve [--addr HOST:PORT] [--data DIR] [--store bbolt|postgres://…] [--check-on-start] [--sandbox] [--base-url URL] [--trusted-proxies CIDR,…] [--sim-addr HOST:PORT] [--log-format text|json] [--log-level debug|info|warn|error]
               [--webhook-allow-private[=false]] [--webhook-ca-file PEM_FILE] [--webhook-timeout DURATION]
               [--session-idle DURATION] [--session-max-age DURATION]
               [--metrics-addr HOST:PORT|off] [--metrics-public] [--max-conns N] [--max-idle-per-addr N] [--max-streams-per-user N]
               [--max-conns-per-addr N] [--conns-per-addr-exempt loopback|none|IP,CIDR,…]
  herald sim [--addr HOST:PORT] [--latency DURATION] [--limit-scale F]
  herald users create --data DIR --email E [--name N] [--plan free|starter|growth|pro|max] [--timezone IANA_ZONE] [--password-stdin]
  herald users set-password --data DIR --email E          (reads the new password from stdin)
  herald keys create --data DIR --email E --name N [--expires-in DURATION (positive)]
  herald keys list --data DIR --email E
  herald keys revoke --data DIR KEY_ID
  herald keys regenerate --data DIR KEY_ID
  herald accounts add --data DIR --email E --platform bluesky --handle H --app-password P
  herald accounts add --data DIR --email E --platform twitter_x --client-id ID [--client-secret S]
                      --access-token T [--refresh-token R] [--expires-in SECONDS] [--sim-url URL]
  herald accounts list --data DIR --email E
  herald backup --data DIR --out FILE     (bbolt; a PostgreSQL store is backed up with pg_dump or base backups)
  herald migrate --from DIR/herald.db --to postgres://USER:PASSWORD@HOST/DB
                                          (copies a bbolt store into an empty PostgreSQL database, verified per bucket)
  herald check --data DIR | --file FILE     (checks the database file, with no server running on it; exit 0 sound, 1 damaged, 3 not checked)
  herald bench [--quick] [--scenario NAME] [--out FILE]
  herald mcp [--api-url URL] [--allow-private] [--log-level debug|info|warn|error]
             (the MCP tools over stdio for a local AI host; needs HERALD_API_KEY, HERALD_API_URL defaults to http://127.0.0.1:8080)

Environment: HERALD_ADDR, HERALD_DATA_DIR, HERALD_STORE, HERALD_NODE_ADDR, HERALD_SANDBOX=1, HERALD_BASE_URL, HERALD_LOG_FORMAT, HERALD_LOG_LEVEL;
for mcp: HERALD_API_URL, HERALD_API_KEY.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(args[1:], stderr)
	case "sim":
		err = cmdSim(args[1:], stderr)
	case "users":
		err = cmdUsers(args[1:], os.Stdin, stdout)
	case "keys":
		err = cmdKeys(args[1:], stdout)
	case "accounts":
		err = cmdAccounts(args[1:], stdout)
	case "backup":
		err = cmdBackup(args[1:], stdout)
	case "migrate":
		err = cmdMigrate(args[1:], stdout)
	case "check":
		err = cmdCheck(args[1:], stdout)
	case "bench":
		err = cmdBench(args[1:], stdout, stderr)
	case "mcp":
		err = cmdMCP(args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "herald: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald %s: %v\n", args[0], err)
		var ue *usageError
		if errors.As(err, &ue) {
			return 2
		}
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

// parseFlags parses flags that may come before or after positional arguments and returns the
// positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
