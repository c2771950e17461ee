// Command sarama judges roster's transactions with IBM/sarama, printing JSON lines:
//
//	sarama produce -brokers B -topic T -txid ID -count N
//	    one transaction of N records committed ("c-0".."c-N-1"), then one aborted ("a-...").
//	sarama read -brokers B -topic T -isolation committed|uncommitted -until V
//	    partition 0 of T from the start up to the record whose value is V (a sentinel the test
//	    writes last, as sarama never returns control records), each record as an event.
//	sarama copy -brokers B -in T -out T -group G -txid ID -expect N
//	    a consumer-group member (read_committed) copying each input record to -out as
//	    "<value>|copied" in a transaction of its own, with its offset added by
//	    AddMessageToTxnWithGroupMetadata (KIP-447: generation and member id), until N are copied.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"roster/tests/go/events"
)

func main() {
	if len(os.Args) < 2 {
		events.Fail("usage", errors.New("sarama produce|read|copy [flags]"))
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "", "bootstrap servers, comma separated")
	topic := flags.String("topic", "", "topic to produce to (produce)")
	txid := flags.String("txid", "", "transactional.id")
	count := flags.Int("count", 3, "records per transaction (produce)")
	in := flags.String("in", "", "input topic (copy)")
	out := flags.String("out", "", "output topic (copy)")
	group := flags.String("group", "", "consumer group (copy)")
	expect := flags.Int("expect", 0, "records to copy before stopping (copy)")
	version := flags.String("version", "4.0.0", "the Kafka version sarama speaks")
	isolation := flags.String("isolation", "committed", "committed or uncommitted (read)")
	until := flags.String("until", "", "the value of the last record to read (read)")
	fetchBytes := flags.Int("fetch-bytes", 0, "max bytes a fetch asks for, 0 for the default (read)")
	flags.Parse(os.Args[2:])
	kafkaVersion, err := sarama.ParseKafkaVersion(*version)
	if err != nil {
		events.Fail("parsing -version", err)
	}
	addrs := strings.Split(*brokers, ",")
	if os.Args[1] == "read" {
		read(addrs, kafkaVersion, *topic, *isolation, *until, int32(*fetchBytes))
		return
	}
	producer, err := sarama.NewSyncProducer(addrs, producerConfig(kafkaVersion, *txid))
	if err != nil {
		events.Fail("creating the producer", err)
	}
	defer producer.Close()

	switch os.Args[1] {
	case "produce":
		produce(producer, *topic, *count)
	case "copy":
		copyTopic(producer, addrs, kafkaVersion, *in, *out, *group, *expect)
	default:
		events.Fail("usage", fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func producerConfig(version sarama.KafkaVersion, txid string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = txid
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

func produce(producer sarama.SyncProducer, topic string, count int) {
	for _, end := range []struct {
		prefix string
		finish func() error
		event  string
	}{{"c", producer.CommitTxn, "committed"}, {"a", producer.AbortTxn, "aborted"}} {
		if err := producer.BeginTxn(); err != nil {
			events.Fail("beginning a transaction", err)
		}
		for i := 0; i < count; i++ {
			value := fmt.Sprintf("%s-%d", end.prefix, i)
			_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic,
				Value: sarama.StringEncoder(value)})
			if err != nil {
				events.Fail("producing "+value, err)
			}
		}
		if err := end.finish(); err != nil {
			events.Fail("ending a transaction ("+end.event+")", err)
		}
		events.Emit(end.event, map[string]any{"records": count})
	}
}

func read(addrs []string, version sarama.KafkaVersion, topic, isolation, until string,
	fetchBytes int32) {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	if isolation == "uncommitted" {
		cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	}
	if fetchBytes > 0 {
		cfg.Consumer.Fetch.Default = fetchBytes
		cfg.Consumer.Fetch.Min = 1
		cfg.Consumer.Fetch.MaxBytes = fetchBytes
	}
	consumer, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		events.Fail("creating the consumer", err)
	}
	defer consumer.Close()
	partition, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		events.Fail("consuming partition 0", err)
	}
	defer partition.Close()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case message := <-partition.Messages():
			events.Emit("record", map[string]any{"partition": message.Partition,
				"offset": message.Offset, "value": string(message.Value)})
			if string(message.Value) == until {
				events.Emit("end", nil)
				return
			}
		case err := <-partition.Errors():
			events.Fail("fetching", err)
		case <-deadline:
			events.Fail("reading", fmt.Errorf("no record %q within 60 s", until))
		}
	}
}

// copier is the consumer group's handler: one transaction per record, serialised across the
// partitions' claims (a producer has one transaction at a time).
type copier struct {
	producer sarama.SyncProducer
	group    string
	out      string
	expect   int
	done     context.CancelFunc

	mu     sync.Mutex
	copied int
}

func (c *copier) Setup(session sarama.ConsumerGroupSession) error {
	events.Emit("assigned", map[string]any{"claims": session.Claims(),
		"generation": session.GenerationID()})
	return nil
}

func (c *copier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *copier) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		if err := c.copy(session, message); err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) copy(session sarama.ConsumerGroupSession, message *sarama.ConsumerMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.producer.BeginTxn(); err != nil {
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	value := append(append([]byte{}, message.Value...), "|copied"...)
	if _, _, err := c.producer.SendMessage(&sarama.ProducerMessage{Topic: c.out,
		Key: sarama.ByteEncoder(message.Key), Value: sarama.ByteEncoder(value)}); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	metadata := sarama.NewConsumerGroupMetadataFromSession(session, c.group, nil)
	if err := c.producer.AddMessageToTxnWithGroupMetadata(message, metadata, nil); err != nil {
		return fmt.Errorf("adding the offset to the transaction: %w", err)
	}
	if err := c.producer.CommitTxn(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	c.copied++
	events.Emit("committed", map[string]any{"partition": message.Partition,
		"next": message.Offset + 1, "copied": c.copied})
	if c.copied >= c.expect {
		c.done()
	}
	return nil
}

func copyTopic(producer sarama.SyncProducer, addrs []string, version sarama.KafkaVersion,
	in, out, group string, expect int) {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	consumer, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		events.Fail("creating the consumer group", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	handler := &copier{producer: producer, group: group, out: out, expect: expect, done: cancel}
	for ctx.Err() == nil {
		if err := consumer.Consume(ctx, []string{in}, handler); err != nil &&
			!errors.Is(err, sarama.ErrClosedConsumerGroup) {
			events.Fail("consuming", err)
		}
	}
	if err := consumer.Close(); err != nil {
		events.Fail("closing the consumer group", err)
	}
	if handler.copied < expect {
		events.Fail("copying", fmt.Errorf("copied %d of %d before the deadline", handler.copied, expect))
	}
	events.Emit("done", map[string]any{"copied": handler.copied})
}
