// Command franz judges roster's transactions with franz-go (pkg/kgo), printing JSON lines:
//
//	franz produce -brokers B -topic T -txid ID -count N
//	    one transaction of N records committed ("c-0".."c-N-1"), then one aborted ("a-...").
//	franz interleave -brokers B -topic T -txid ID
//	    three producers' transactions interleaved in one partition (see interleave), two of
//	    them aborted, so a read_committed fetch has aborted ranges to drop around committed data.
//	franz zombie -brokers B -topic T -txid ID
//	    producer A writes "z-0" in a transaction; producer B, the same transactional.id, starts
//	    (fencing A), writes "b-0" and commits; then A writes "z-1" and tries to commit: the
//	    errors A gets are reported ("fenced"), and read_committed must see b-0 alone.
//	franz read -brokers B -topic T -isolation committed|uncommitted
//	    every record from the start to the end offsets listed when it starts, markers included.
//	franz loop -brokers B -in T -out T -group G -txid ID -instance I [-protocol classic|consumer]
//	    a GroupTransactSession consume-transform-produce loop (static member I): each polled
//	    batch's records go to -out as "<value>|copied" with the offsets in one transaction,
//	    until "quit" (or end of file) on stdin, or SIGTERM. It can be SIGKILLed anywhere and
//	    restarted. -protocol consumer joins with the consumer group protocol (KIP-848), whose
//	    member epoch each TxnOffsetCommit carries.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"roster/tests/go/events"
)

func main() {
	if len(os.Args) < 2 {
		events.Fail("usage", errors.New("franz produce|interleave|zombie|read|loop [flags]"))
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "", "bootstrap servers, comma separated")
	topic := flags.String("topic", "", "topic to produce to or read")
	txid := flags.String("txid", "", "transactional.id")
	count := flags.Int("count", 3, "records per transaction (produce)")
	isolation := flags.String("isolation", "committed", "committed or uncommitted (read)")
	in := flags.String("in", "", "input topic (loop)")
	out := flags.String("out", "", "output topic (loop)")
	group := flags.String("group", "", "consumer group (loop)")
	instance := flags.String("instance", "", "group.instance.id (loop)")
	batch := flags.Int("batch", 25, "records per transaction at most (loop)")
	protocol := flags.String("protocol", "classic", "the group protocol, classic or consumer (loop)")
	fetchBytes := flags.Int("fetch-bytes", 0, "max bytes a fetch asks for, 0 for the default (read); "+
		"1 makes every fetch return one batch, starting mid-transaction")
	flags.Parse(os.Args[2:])
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)

	switch os.Args[1] {
	case "produce":
		produce(seeds, *topic, *txid, *count)
	case "interleave":
		interleave(seeds, *topic, *txid)
	case "zombie":
		zombie(seeds, *topic, *txid)
	case "read":
		read(seeds, *topic, *isolation, int32(*fetchBytes))
	case "loop":
		loop(seeds, *in, *out, *group, *txid, *instance, *protocol, *batch)
	default:
		events.Fail("usage", fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func produce(seeds kgo.Opt, topic, txid string, count int) {
	client, err := kgo.NewClient(seeds, kgo.TransactionalID(txid), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		events.Fail("creating the producer", err)
	}
	defer client.Close()
	ctx := context.Background()
	for _, end := range []struct {
		prefix string
		how    kgo.TransactionEndTry
		event  string
	}{{"c", kgo.TryCommit, "committed"}, {"a", kgo.TryAbort, "aborted"}} {
		if err := client.BeginTransaction(); err != nil {
			events.Fail("beginning a transaction", err)
		}
		for i := 0; i < count; i++ {
			value := fmt.Sprintf("%s-%d", end.prefix, i)
			if err := client.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
				events.Fail("producing "+value, err)
			}
		}
		if err := client.EndTransaction(ctx, end.how); err != nil {
			events.Fail("ending a transaction ("+end.event+")", err)
		}
		events.Emit(end.event, map[string]any{"records": count})
	}
}

// interleave writes, in this order of offsets, a1 b1 c1 a2 b2 a3 c2 with A's transaction
// (a1 a2 a3) aborted, B's first (b1) committed and its second (b2) aborted, and C's (c1 c2)
// committed: read_committed sees b1 c1 c2.
func interleave(seeds kgo.Opt, topic, txid string) {
	ctx := context.Background()
	producers := map[string]*kgo.Client{}
	for _, name := range []string{"a", "b", "c"} {
		client, err := kgo.NewClient(seeds, kgo.TransactionalID(txid+"-"+name),
			kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(30*time.Second))
		if err != nil {
			events.Fail("creating producer "+name, err)
		}
		defer client.Close()
		producers[name] = client
	}
	steps := []string{"a begin", "b begin", "c begin", "a a1", "b b1", "c c1", "a a2",
		"b commit", "b begin", "b b2", "a a3", "a abort", "c c2", "b abort", "c commit"}
	for _, step := range steps {
		name, what, _ := strings.Cut(step, " ")
		client := producers[name]
		var err error
		switch what {
		case "begin":
			err = client.BeginTransaction()
		case "commit":
			err = client.EndTransaction(ctx, kgo.TryCommit)
		case "abort":
			err = client.EndTransaction(ctx, kgo.TryAbort)
		default:
			err = client.ProduceSync(ctx, kgo.StringRecord(what)).FirstErr()
		}
		if err != nil {
			events.Fail(step, err)
		}
	}
	events.Emit("done", nil)
}

func zombie(seeds kgo.Opt, topic, txid string) {
	ctx := context.Background()
	producer := func(name string) *kgo.Client {
		client, err := kgo.NewClient(seeds, kgo.TransactionalID(txid), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(30*time.Second), kgo.RecordRetries(2))
		if err != nil {
			events.Fail("creating producer "+name, err)
		}
		if err := client.BeginTransaction(); err != nil {
			events.Fail("beginning "+name+"'s transaction", err)
		}
		return client
	}
	a := producer("a")
	defer a.Close()
	if err := a.ProduceSync(ctx, kgo.StringRecord("z-0")).FirstErr(); err != nil {
		events.Fail("a producing z-0", err)
	}
	b := producer("b")
	defer b.Close()
	if err := b.ProduceSync(ctx, kgo.StringRecord("b-0")).FirstErr(); err != nil {
		events.Fail("b producing b-0", err)
	}
	if err := b.EndTransaction(ctx, kgo.TryCommit); err != nil {
		events.Fail("b committing", err)
	}
	produced := a.ProduceSync(ctx, kgo.StringRecord("z-1")).FirstErr()
	ended := a.EndTransaction(ctx, kgo.TryCommit)
	events.Emit("fenced", map[string]any{"produce": errorText(produced), "commit": errorText(ended)})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// read consumes from the start up to the end offsets listed first, keeping control records so
// that it knows where the end is even when it is a marker (at read_committed the aborted data
// before it is never returned).
func read(seeds kgo.Opt, topic, isolation string, fetchBytes int32) {
	level := kgo.ReadCommitted()
	if isolation == "uncommitted" {
		level = kgo.ReadUncommitted()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(seeds)
	if err != nil {
		events.Fail("creating the admin client", err)
	}
	listed, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	admin.Close()
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		events.Fail("listing end offsets", err)
	}
	remaining := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	options := []kgo.Opt{seeds, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if fetchBytes > 0 {
		options = append(options, kgo.FetchMaxBytes(fetchBytes), kgo.FetchMaxPartitionBytes(fetchBytes))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		events.Fail("creating the reader", err)
	}
	defer client.Close()
	for len(remaining) > 0 {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			events.Fail(fmt.Sprintf("reading to the end (left: %v)", remaining), err)
		}
		fetches.EachError(func(t string, p int32, err error) { events.Fail("fetching", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() {
				events.Emit("marker", map[string]any{"partition": r.Partition, "offset": r.Offset})
			} else {
				events.Emit("record", map[string]any{"partition": r.Partition,
					"offset": r.Offset, "value": string(r.Value)})
			}
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	events.Emit("end", nil)
}

func loop(seeds kgo.Opt, in, out, group, txid, instance, protocol string, batch int) {
	opts := []kgo.Opt{seeds,
		kgo.TransactionalID(txid), kgo.TransactionTimeout(20 * time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.InstanceID(instance),
		kgo.SessionTimeout(10 * time.Second), kgo.DefaultProduceTopic(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			events.Emit("assigned", map[string]any{"partitions": assigned[in]})
		})}
	switch protocol {
	case "consumer":
		opts = append(opts, kgo.ServerSideBalancer())
	case "classic":
	default:
		events.Fail("usage", fmt.Errorf("unknown group protocol %q", protocol))
	}
	session, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		events.Fail("creating the session", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { // "quit" or the end of stdin: finish the transaction under way, then leave
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() && lines.Text() != "quit" {
		}
		stop()
	}()
	// Like the Java client's initTransactions(): take the transactional.id now (InitProducerId),
	// which aborts what a killed predecessor left open. franz-go would otherwise do it at the
	// first Begin, after polling, and a poll can wait on that very transaction: the partitions
	// it wrote to are held at their last stable offset until it ends (its timeout, 20 s).
	if err := session.Begin(); err != nil {
		events.Fail("taking the transactional.id", err)
	}
	if _, err := session.End(context.Background(), kgo.TryAbort); err != nil {
		events.Fail("ending the empty transaction", err)
	}
	events.Emit("started", nil)
	for ctx.Err() == nil {
		fetches := session.PollRecords(ctx, batch)
		if ctx.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) { events.Fail("fetching", err) })
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := session.Begin(); err != nil {
			events.Fail("beginning a transaction", err)
		}
		next := map[string]int64{}
		fetches.EachRecord(func(r *kgo.Record) {
			copied := &kgo.Record{Key: r.Key, Value: append(append([]byte{}, r.Value...), "|copied"...)}
			session.Produce(context.Background(), copied, func(_ *kgo.Record, err error) {
				if err != nil {
					events.Emit("produce-failed", map[string]any{"error": err.Error()})
				}
			})
			next[fmt.Sprint(r.Partition)] = r.Offset + 1
		})
		events.Emit("produced", map[string]any{"records": fetches.NumRecords()})
		committed, err := session.End(context.Background(), kgo.TryCommit)
		if err != nil {
			events.Fail("ending a transaction", err)
		}
		if committed {
			events.Emit("committed", map[string]any{"records": fetches.NumRecords(), "next": next})
		} else {
			events.Emit("aborted", map[string]any{"records": fetches.NumRecords()})
		}
	}
	session.Close()
	events.Emit("closed", nil)
}
