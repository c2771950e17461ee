// group_consumer joins a consumer group with sarama's default settings (only the protocol
// version is set: sarama refuses groups below 0.10.2, and its default is 0.8.2), consumes until
// it has seen -expect messages, marks each one, and leaves the group, which commits the marked
// offsets. sarama then commits with OffsetCommit v1 (Consumer.Offsets.Retention is 0 by default).
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
	version := flag.String("version", "0.11.0.0", "Kafka protocol version sarama speaks")
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
