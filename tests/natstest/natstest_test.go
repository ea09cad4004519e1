package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/tests/natstest"
)

// The server starts with JetStream, keeps a stream's messages over a kill and restart, and answers again after a
// pause.
func TestServerKillRestartPause(t *testing.T) {
	s := natstest.StartT(t, natstest.Options{User: "u", Password: "p"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.CreateStream(t, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	js := s.JetStream(t)
	if err := natstest.Publish(ctx, js, "s.a", [][]byte{[]byte("1"), []byte("2"), []byte("3")}); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	s.Resume()
	msgs, err := natstest.ReadAll(ctx, s.JetStream(t), "S")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || string(msgs[2].Data()) != "3" {
		t.Fatalf("read %d messages after the restart, want 3", len(msgs))
	}
}
