package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/connectors"
)

var _ connectors.SourceReleaser = sourceConnector{}

// slotReleaseWait is how long Release waits for a slot's reader (a walsender whose client just closed) to let go.
const slotReleaseWait = 5 * time.Second

// errSlotInUse is what dropSlot's error wraps when the slot's reader did not let go within slotReleaseWait.
var errSlotInUse = errors.New("in use")

// publicationMark is the comment a publication the source created carries: what makes it the source's to drop.
func publicationMark(slot string) string {
	return "created by clinksql postgres-cdc for replication slot " + slot
}

// Release implements connectors.SourceReleaser: it drops the stream's replication slot (ReleaseJob and
// ReleaseStream), and at ReleaseStream the publication too when the source created it (it carries
// publicationMark of this slot, or it has the default name <slot>_pub and no comment at all: created before the
// mark existed). A publication named by publication.name that the source did not create is never dropped. A
// slot or publication already gone is not an error; a slot still in use after 5 s is (the job reading it has not
// let go), and so is a server that cannot be reached: the error names what is left and the SQL that drops it.
func (sourceConnector) Release(ctx context.Context, _ connectors.Spec, opts map[string]string, _ connectors.Env,
	what connectors.Releasing) error {
	cfg, err := ParseConfig(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	left := func(err error) error {
		manual := fmt.Sprintf("SELECT pg_drop_replication_slot('%s')", cfg.Slot)
		if what == connectors.ReleaseStream {
			manual += fmt.Sprintf("; DROP PUBLICATION IF EXISTS %s (if clinksql created it)", cfg.Publication)
		}
		return fmt.Errorf("replication slot %q on %s:%d was not dropped, and keeps WAL on that server until it is: "+
			"run %s in database %s (%w)", cfg.Slot, cfg.Host, cfg.Port, manual, cfg.Database, err)
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		var ce *connectors.ConfigError
		if errors.As(err, &ce) && ce.Err != nil {
			err = ce.Err // the server's words, without "postgres-cdc: cannot connect" around them
		}
		return left(err)
	}
	defer conn.Close(context.Background())
	if err := dropSlot(ctx, conn, cfg.Slot); err != nil {
		return left(err)
	}
	if what != connectors.ReleaseStream {
		return nil
	}
	var comment *string
	err = conn.QueryRow(ctx, `SELECT obj_description(oid, 'pg_publication') FROM pg_publication WHERE pubname = $1`,
		cfg.Publication).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres-cdc: replication slot %q dropped; publication %s left (%w): DROP PUBLICATION %s if clinksql created it",
			cfg.Slot, cfg.Publication, err, cfg.Publication)
	}
	ours := (comment != nil && *comment == publicationMark(cfg.Slot)) || (comment == nil && cfg.PublicationDerived)
	if !ours {
		return nil
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+cfg.Publication); err != nil {
		return fmt.Errorf("postgres-cdc: replication slot %q dropped; publication %s left (%w): DROP PUBLICATION %s",
			cfg.Slot, cfg.Publication, err, cfg.Publication)
	}
	return nil
}

// dropSlot drops the slot if it exists, waiting up to slotReleaseWait for its reader to let go (Release, and a
// source's fresh start).
func dropSlot(ctx context.Context, conn *pgx.Conn, slot string) error {
	for end := time.Now().Add(slotReleaseWait); ; {
		var pid *int32
		err := conn.QueryRow(ctx, `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if pid == nil {
			_, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot)
			var pe *pgconn.PgError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &pe) && pe.Code == "42704": // gone meanwhile
				return nil
			case !(errors.As(err, &pe) && pe.Code == "55006"): // 55006: taken meanwhile; wait as for an active one
				return err
			}
		}
		if time.Now().After(end) {
			if pid != nil {
				return fmt.Errorf("it is %w by server process %d for more than %s", errSlotInUse, *pid, slotReleaseWait)
			}
			return fmt.Errorf("it is %w for more than %s", errSlotInUse, slotReleaseWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
