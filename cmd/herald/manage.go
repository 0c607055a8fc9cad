package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// offline opens the data directory's store for a management command when no server runs on it:
// the bbolt file in dir, or the PostgreSQL database that HERALD_STORE names.
func offline(dir string) (*persistence.Store, error) {
	store := envOr("HERALD_STORE", "bbolt")
	s, err := persistence.OpenStore(store, dir, persistence.Options{LockTimeout: 2 * time.Second})
	if errors.Is(err, persistence.ErrLocked) && persistence.IsPostgresURL(store) {
		return nil, fmt.Errorf("the PostgreSQL store %s is in use by a herald process, and no server answers on the admin socket %s; "+
			"run the command with the --data directory of the server that uses it", persistence.RedactURL(store), admin.SocketPath(dir))
	}
	if errors.Is(err, persistence.ErrLocked) {
		return nil, fmt.Errorf("the database in %s is locked by another process, and no server answers on its admin socket %s; "+
			"stop the other herald process (or wait for it to finish) and run the command again", dir, admin.SocketPath(dir))
	}
	return s, app.DamagedStore(err, dir, "The command did not run")
}

// manage runs one management operation through the running server's admin socket when there is
// one, else directly on the store.
func manage(dir string, online func(c *admin.Client) (any, error), direct func(s *persistence.Store) (any, error), out io.Writer) error {
	if dir == "" {
		return errors.New("--data DIR is required")
	}
	var v any
	var err error
	if c := admin.Dial(dir); c != nil {
		v, err = online(c)
	} else {
		s, oerr := offline(dir)
		if oerr != nil {
			return oerr
		}
		v, err = direct(s)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

const usersUsage = "usage: herald users create --data DIR --email E [--name N] [--plan PLAN] [--timezone ZONE] [--password-stdin]\n" +
	"       herald users set-password --data DIR --email E   (the password is read from stdin)"

func cmdUsers(args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usersUsage)
	}
	switch args[0] {
	case "create":
		return cmdUsersCreate(args[1:], in, out)
	case "set-password":
		return cmdUsersSetPassword(args[1:], in, out)
	}
	return errors.New(usersUsage)
}

func cmdUsersCreate(args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	var in auth.NewUser
	fs.StringVar(&in.Email, "email", "", "e-mail")
	fs.StringVar(&in.Name, "name", "", "display name")
	fs.StringVar(&in.Plan, "plan", "free", "plan")
	fs.StringVar(&in.Timezone, "timezone", "UTC", "IANA time zone")
	pwStdin := fs.Bool("password-stdin", false, "read the user's dashboard password from stdin")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if in.Email == "" {
		return errors.New("--email is required")
	}
	if *pwStdin {
		pw, err := readPassword(stdin)
		if err != nil {
			return err
		}
		in.Password = pw
	}
	return manage(*dir,
		func(c *admin.Client) (any, error) {
			var u persistence.User
			return &u, c.Do("POST", "/users", in, &u)
		},
		func(s *persistence.Store) (any, error) {
			return auth.CreateUser(context.Background(), s, in, time.Now())
		}, out)
}

// cmdUsersSetPassword sets a user's dashboard password, read from stdin, and ends every session
// the user has.
func cmdUsersSetPassword(args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("users set-password", flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	email := fs.String("email", "", "e-mail")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	pw, err := readPassword(stdin)
	if err != nil {
		return err
	}
	return manage(*dir,
		func(c *admin.Client) (any, error) {
			var v admin.PasswordSet
			return &v, c.Do("POST", "/users/password", map[string]string{"email": *email, "password": pw}, &v)
		},
		func(s *persistence.Store) (any, error) {
			u, ended, err := auth.SetPassword(context.Background(), s, *email, pw, auth.PasswordParams{})
			return admin.PasswordSet{User: u, SessionsEnded: ended}, err
		}, out)
}

// readPassword reads a password from stdin: its first line, without the line break (so that
// `echo pw |` and a file both work). Nothing is echoed or printed.
func readPassword(stdin io.Reader) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, auth.MaxPasswordBytes+2))
	if err != nil {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", errors.New("no password on stdin: pipe it in, e.g. herald users set-password --data DIR --email E < password-file")
	}
	return line, auth.ValidatePassword(line)
}

func cmdKeys(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: herald keys create|list|revoke|regenerate ...")
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	email := fs.String("email", "", "user e-mail")
	name := fs.String("name", "", "key name")
	expires := fs.Duration("expires-in", 0, "expiry, e.g. 720h (positive; omit it for a key that does not expire)")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	expiresSet := false
	fs.Visit(func(f *flag.Flag) { expiresSet = expiresSet || f.Name == "expires-in" })
	now := time.Now()
	switch args[0] {
	case "create":
		if *email == "" || *name == "" {
			return errors.New("--email and --name are required")
		}
		// --expires-in 0s or -1h is refused: only its absence makes a key that never expires.
		if expiresSet {
			if err := auth.KeyExpiry(*expires); err != nil {
				return errors.New(strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
			}
		}
		return manage(*dir,
			func(c *admin.Client) (any, error) {
				var k auth.CreatedKey
				in := map[string]string{"email": *email, "name": *name}
				if expiresSet {
					in["expires_in"] = expires.String()
				}
				return &k, c.Do("POST", "/keys", in, &k)
			},
			func(s *persistence.Store) (any, error) {
				return auth.CreateKey(context.Background(), s, *email, *name, *expires, now)
			}, out)
	case "list":
		if *email == "" {
			return errors.New("--email is required")
		}
		return manage(*dir,
			func(c *admin.Client) (any, error) {
				var keys []auth.KeyInfo
				return keys, c.Do("GET", "/keys?email="+url.QueryEscape(*email), nil, &keys)
			},
			func(s *persistence.Store) (any, error) { return auth.ListKeys(s, *email) }, out)
	case "revoke", "regenerate":
		if len(pos) != 1 {
			return fmt.Errorf("usage: herald keys %s --data DIR KEY_ID", args[0])
		}
		id := pos[0]
		return manage(*dir,
			func(c *admin.Client) (any, error) {
				var v json.RawMessage
				return &v, c.Do("POST", "/keys/"+url.PathEscape(id)+"/"+args[0], nil, &v)
			},
			func(s *persistence.Store) (any, error) {
				if args[0] == "revoke" {
					return auth.RevokeKey(context.Background(), s, id, now)
				}
				return auth.RegenerateKey(context.Background(), s, id)
			}, out)
	}
	return fmt.Errorf("unknown keys command %q", args[0])
}

func cmdMigrate(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	from := fs.String("from", "", "the bbolt file to copy (DIR/herald.db), which no server may have open")
	to := fs.String("to", "", "the empty PostgreSQL database to copy it into (postgres://…)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" || !persistence.IsPostgresURL(*to) {
		return errors.New("usage: herald migrate --from DIR/herald.db --to postgres://USER:PASSWORD@HOST/DB")
	}
	if st, err := os.Stat(*from); err == nil && st.IsDir() {
		*from = filepath.Join(*from, persistence.FileName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
	defer cancel()
	rows, err := persistence.MigrateToPostgres(ctx, *from, *to)
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "bucket\trows (bbolt)\trows (postgres)\tsha256 (bbolt)\tsha256 (postgres)\t")
		for _, r := range rows {
			verdict := "same"
			if !r.Match() {
				verdict = "DIFFERENT"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.16s\t%.16s\t%s\n", r.Bucket, r.Rows, r.TargetRows, r.Sum, r.TargetSum, verdict)
		}
		_ = tw.Flush()
	}
	if errors.Is(err, persistence.ErrLocked) {
		return fmt.Errorf("%s or the database is in use by another herald process; stop it and run the command again", *from)
	}
	if err != nil {
		return err
	}
	total := 0
	for _, r := range rows {
		total += r.Rows
	}
	fmt.Fprintf(out, "copied %d rows in %d buckets into %s; every bucket's count and checksum match.\n"+
		"Start the server with --store (or HERALD_STORE) set to it and the same --data directory (its secret key file reads the stored tokens).\n",
		total, len(rows), persistence.RedactURL(*to))
	return nil
}

func cmdBackup(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	file := fs.String("out", "", "backup file")
	store := fs.String("store", envOr("HERALD_STORE", "bbolt"), "the server's --store")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if persistence.IsPostgresURL(*store) {
		return errors.New("the store is a PostgreSQL database, which herald backup does not copy: back it up with PostgreSQL's own tools, " +
			"pg_dump for a logical copy (pg_dump -Fc -f herald.dump URL) or a base backup (pg_basebackup) with WAL archiving for point-in-time recovery " +
			"(docs/operations.md, Running on PostgreSQL). The secret key file in --data is needed to read the stored tokens: keep a copy of it with the database's backups")
	}
	if *file == "" {
		return errors.New("--out FILE is required")
	}
	// The server resolves paths from its own working directory; send it an absolute one.
	if abs, err := filepath.Abs(*file); err == nil {
		*file = abs
	}
	return manage(*dir,
		func(c *admin.Client) (any, error) {
			var v json.RawMessage
			return &v, c.Do("POST", "/backup", map[string]string{"out": *file}, &v)
		},
		func(s *persistence.Store) (any, error) {
			return map[string]string{"out": *file}, s.Backup(*file)
		}, out)
}
