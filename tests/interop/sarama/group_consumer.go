// group_consumer joins a consumer group with sarama's default settings (only the protocol
// version is set: sarama refuses groups below 0.10.2, and its default is 0.8.2; the default here
// is that floor, 0.10.2.0), consumes until it has seen -expect messages, marks each one, and
// leaves the group, which commits the marked offsets. sarama then commits with OffsetCommit v1
// (Consumer.Offsets.Retention is 0 by default). At 0.10.2 it fetches with Fetch v3 (magic-1
// message sets) and produces with Produce v2; from 0.11.0 with Fetch v4 and Produce v3.
// With -produce N it first produces N messages ("key-<i>", "value-<i>") with a SyncProducer at
// the same version, message i to partition i % -partitions, compressed with -compression.
// It prints one line per partition: "consumed <partition> <count> <last offset>".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type handler struct {
	mu     sync.Mutex
	expect int
	seen   int
	counts map[int32]int
	last   map[int32]int64
	cancel context.CancelFunc
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		session.MarkMessage(message, "")
		h.mu.Lock()
		h.seen++
		h.counts[message.Partition]++
		h.last[message.Partition] = message.Offset
		done := h.seen >= h.expect
		h.mu.Unlock()
		if done {
			h.cancel()
		}
	}
	return nil
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma separated")
	topic := flag.String("topic", "", "topic to consume")
	group := flag.String("group", "", "consumer group id")
	expect := flag.Int("expect", 1, "messages to consume before leaving")
	version := flag.String("version", "0.10.2.0", "Kafka protocol version sarama speaks")
	produce := flag.Int("produce", 0, "messages to produce before consuming")
	spread := flag.Int("partitions", 1, "partitions the produced messages go round")
	compression := flag.String("compression", "none", "none, gzip, snappy or lz4")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()

	config := sarama.NewConfig()
	parsed, err := sarama.ParseKafkaVersion(*version)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	config.Version = parsed
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Return.Errors = true

	if *produce > 0 {
		if err := produceMessages(strings.Split(*brokers, ","), *topic, *produce, *spread,
			*compression, parsed); err != nil {
			fmt.Fprintln(os.Stderr, "producing:", err)
			os.Exit(1)
		}
	}

	consumer, err := sarama.NewConsumerGroup(strings.Split(*brokers, ","), *group, config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "joining:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	go func() {
		for err := range consumer.Errors() {
			fmt.Fprintln(os.Stderr, "consumer error:", err)
		}
	}()
	h := &handler{expect: *expect, counts: map[int32]int{}, last: map[int32]int64{}, cancel: cancel}
	for ctx.Err() == nil {
		if err := consumer.Consume(ctx, []string{*topic}, h); err != nil {
			fmt.Fprintln(os.Stderr, "consume:", err)
			os.Exit(1)
		}
	}
	if err := consumer.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing:", err)
		os.Exit(1)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	partitions := make([]int, 0, len(h.counts))
	for p := range h.counts {
		partitions = append(partitions, int(p))
	}
	sort.Ints(partitions)
	for _, p := range partitions {
		fmt.Printf("consumed %d %d %d\n", p, h.counts[int32(p)], h.last[int32(p)])
	}
	if h.seen < h.expect {
		fmt.Fprintf(os.Stderr, "saw %d of %d messages before the timeout\n", h.seen, h.expect)
		os.Exit(1)
	}
}

func produceMessages(brokers []string, topic string, count, partitions int, compression string,
	version sarama.KafkaVersion) error {
	config := sarama.NewConfig()
	config.Version = version
	config.Producer.Return.Successes = true
	config.Producer.Partitioner = sarama.NewManualPartitioner
	codecs := map[string]sarama.CompressionCodec{"none": sarama.CompressionNone,
		"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4}
	codec, ok := codecs[compression]
	if !ok {
		return fmt.Errorf("unknown compression %q", compression)
	}
	config.Producer.Compression = codec
	producer, err := sarama.NewSyncProducer(brokers, config)
	if err != nil {
		return err
	}
	messages := make([]*sarama.ProducerMessage, count)
	for i := range messages {
		messages[i] = &sarama.ProducerMessage{Topic: topic, Partition: int32(i % partitions),
			Key:   sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i))}
	}
	if err := producer.SendMessages(messages); err != nil {
		producer.Close()
		return err
	}
	return producer.Close()
}
