// Command ferretdb runs an embedded FerretDB 1.24 (MongoDB wire protocol) with
// the SQLite backend, for local development and tests.
//
// It embeds github.com/FerretDB/FerretDB/ferretdb instead of building
// cmd/ferretdb, because a binary built with `go install .../cmd/ferretdb`
// panics at start: build/version/version.txt is not part of the module
// download (FerretDB issue 2982). The embedded package skips that check.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on")
	dataDir := flag.String("data", "", "data directory for SQLite files (created if missing)")
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn, error")
	flag.Parse()

	if err := run(*listen, *dataDir, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, dataDir, logLevel string) error {
	if dataDir == "" {
		return errors.New("-data is required")
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToLower(logLevel))); err != nil {
		return fmt.Errorf("invalid -log-level %q: %w", logLevel, err)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}

	if err = os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}

	// The SQLite handler takes a directory URI; the trailing slash is required.
	sqliteURL := "file:" + filepath.ToSlash(abs) + "/"

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	done := make(chan struct{})

	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()

	// Run initialises the listener; MongoDBURI blocks until it is ready.
	fmt.Fprintf(os.Stderr, "ferretdb: listening on %s (sqlite %s)\n", f.MongoDBURI(), sqliteURL)

	<-done
	fmt.Fprintln(os.Stderr, "ferretdb: stopped")

	return nil
}
