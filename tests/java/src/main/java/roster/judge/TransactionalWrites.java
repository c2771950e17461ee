package roster.judge;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's transactional producer, and its consumer at isolation levels, one run each:
 *
 *   produce BOOTSTRAP TRANSACTIONAL_ID TOPIC PARTITIONS COMMIT|ABORT=V1,V2,... ...
 *       one transaction per COMMIT=/ABORT= argument, in order; the i-th value of a transaction
 *       goes to partition i % PARTITIONS; prints {"event":"ended","outcome":...} after each
 *   read BOOTSTRAP TOPIC END0,END1,... ISOLATION ...
 *       for each isolation level in turn, a consumer assigned partitions 0.. from offset 0 polls
 *       until each one's position is its END; prints each record, then each partition's position
 *       (both with the isolation level)
 *
 * Whether the producer speaks Transaction Version 2 is the broker's finalized
 * transaction.version feature (ApiVersions), as for any Kafka 4.x client. A failure exits 1.
 */
public final class TransactionalWrites {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    public static void main(String[] args) {
        try {
            switch (args[0]) {
                case "produce" -> produce(args[1], args[2], args[3], Integer.parseInt(args[4]),
                        List.of(args).subList(5, args.length));
                case "read" -> {
                    for (String isolation : List.of(args).subList(4, args.length)) {
                        read(args[1], args[2], isolation, args[3]);
                    }
                }
                default -> throw new IllegalArgumentException("unknown command " + args[0]);
            }
        } catch (Exception e) {
            Events.emit(Events.failure("error", null, e));
            System.exit(1);
        }
        System.exit(0);
    }

    private static void produce(String bootstrap, String transactionalId, String topic,
                                int partitions, List<String> transactions) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (String transaction : transactions) {
                int eq = transaction.indexOf('=');
                String outcome = transaction.substring(0, eq);
                String[] values = transaction.substring(eq + 1).split(",");
                producer.beginTransaction();
                for (int i = 0; i < values.length; i++) {
                    producer.send(new ProducerRecord<>(topic, i % partitions, null, values[i]));
                }
                producer.flush();    // every partition is in the transaction before it ends
                switch (outcome) {
                    case "COMMIT" -> producer.commitTransaction();
                    case "ABORT" -> producer.abortTransaction();
                    default -> throw new IllegalArgumentException("COMMIT= or ABORT=, not " + outcome);
                }
                Map<String, Object> event = Events.event("ended", null);
                event.put("outcome", outcome);
                Events.emit(event);
            }
        }
    }

    private static void read(String bootstrap, String topic, String isolation, String ends) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        String[] endOffsets = ends.split(",");
        List<TopicPartition> assigned = new ArrayList<>();
        for (int p = 0; p < endOffsets.length; p++) assigned.add(new TopicPartition(topic, p));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (!reached(consumer, assigned, endOffsets)) {
                if (System.nanoTime() > deadline) {
                    positions(consumer, assigned, isolation);
                    throw new IllegalStateException(isolation + " never reached " + ends);
                }
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    Map<String, Object> event = Events.event("record", null);
                    event.put("isolation", isolation);
                    event.put("partition", record.partition());
                    event.put("offset", record.offset());
                    event.put("value", record.value());
                    Events.emit(event);
                }
            }
            positions(consumer, assigned, isolation);
        }
    }

    private static boolean reached(KafkaConsumer<String, String> consumer,
                                   List<TopicPartition> assigned, String[] ends) {
        for (TopicPartition tp : assigned) {
            if (consumer.position(tp) < Long.parseLong(ends[tp.partition()])) return false;
        }
        return true;
    }

    private static void positions(KafkaConsumer<String, String> consumer, List<TopicPartition> assigned,
                                  String isolation) {
        for (TopicPartition tp : assigned) {
            Map<String, Object> event = Events.event("position", null);
            event.put("isolation", isolation);
            event.put("partition", tp.partition());
            event.put("offset", consumer.position(tp));
            Events.emit(event);
        }
    }
}
