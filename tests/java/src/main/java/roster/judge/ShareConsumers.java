package roster.judge;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Several KafkaShareConsumers (KIP-932) in one JVM, each on its own thread, driven by lines on
 * stdin:
 *
 *   start NAME TOPIC[,TOPIC] key=value ...   a share consumer (client.id=NAME) subscribing to TOPICs
 *   stop NAME                                 stop polling; commitSync() (implicit mode), close()
 *   quit                                      close everything and exit
 *
 * The judge.* settings are the program's own, not the consumer's:
 *   judge.ack     what an explicit-mode consumer does with each record (share.acknowledgement.mode
 *                 explicit; an implicit one accepts on its next poll, as the client does):
 *                 accept | release (always) | release-once (release the first delivery, accept
 *                 later ones) | reject-marked (reject values starting with "reject", accept the
 *                 rest) | hold (acknowledge nothing and stop polling after the first records: a
 *                 consumer stuck holding its locks; with judge.hold.ms, accept them after that
 *                 long and go on accepting) | renew (RENEW each record every
 *                 judge.renew.every.ms until it was held judge.hold.ms, then ACCEPT)
 *
 * Printed JSON lines (Events): started/closed; "record" for each record a poll returned, with
 * its partition, offset, delivery count, value, headers and the monotonic time t (ns, comparable
 * with Python's time.monotonic_ns()); "acked" with the type and the time it was sent ("sent"),
 * once commitSync answered for it (explicit mode commits after each poll's acknowledgements; a
 * RENEW is committed too); "ack-result" from the acknowledgement commit callback for every
 * acknowledgement sent (by poll, commitSync or close()), with the exception's class if it failed;
 * "holding"; and errors.
 */
public final class ShareConsumers {
    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Events.emit(Events.event("ready", null));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) continue;
            try {
                switch (words[0]) {
                    case "start" -> start(words[1], words[2], Arrays.copyOfRange(words, 3, words.length));
                    case "stop" -> stop(words[1]);
                    case "quit" -> {
                        MEMBERS.keySet().forEach(ShareConsumers::stop);
                        Events.emit(Events.event("bye", null));
                        System.exit(0);
                    }
                    default -> Events.emit(Events.failure("bad-command", null,
                            new IllegalArgumentException(line)));
                }
            } catch (RuntimeException e) {
                Events.emit(Events.failure("bad-command", null, e));
            }
        }
        MEMBERS.keySet().forEach(ShareConsumers::stop);
        System.exit(0);
    }

    private static void start(String name, String topics, String[] settings) {
        Properties props = new Properties();
        Map<String, String> judge = new HashMap<>();
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        for (String setting : settings) {
            int eq = setting.indexOf('=');
            String key = setting.substring(0, eq);
            String value = setting.substring(eq + 1);
            if (key.startsWith("judge.")) judge.put(key, value);
            else props.put(key, value);
        }
        Member member = new Member(name, List.of(topics.split(",")), props, judge);
        if (MEMBERS.putIfAbsent(name, member) != null) {
            throw new IllegalArgumentException("member " + name + " is running");
        }
        member.thread.start();
    }

    private static void stop(String name) {
        Member member = MEMBERS.get(name);
        if (member == null) return;
        // no wakeup(): a poll it interrupts can leave the records the previous poll returned
        // unacknowledged by close() in implicit mode (seen on Kafka 4.4 and roster alike); the
        // loop sees `stopping` within its 200 ms poll
        member.stopping = true;
        synchronized (member) {
            member.notifyAll();   // a holding member waits on itself
        }
        try {
            member.thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        MEMBERS.remove(name);
    }

    private static final class Member {
        final String name;
        final List<String> topics;
        final KafkaShareConsumer<String, String> consumer;
        final Thread thread;
        final boolean explicit;
        final String policy;
        final long holdMs;
        final long renewEveryMs;
        final Map<String, Long> firstSeen = new HashMap<>();
        volatile boolean stopping;
        private boolean held;

        Member(String name, List<String> topics, Properties props, Map<String, String> judge) {
            this.name = name;
            this.topics = topics;
            this.explicit = "explicit".equals(props.getProperty(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG));
            this.policy = judge.getOrDefault("judge.ack", "accept");
            this.holdMs = Long.parseLong(judge.getOrDefault("judge.hold.ms", "0"));
            this.renewEveryMs = Long.parseLong(judge.getOrDefault("judge.renew.every.ms", "1000"));
            this.consumer = new KafkaShareConsumer<>(props);
            this.thread = new Thread(this::run, "share-member-" + name);
        }

        private void run() {
            Events.emit(Events.event("started", name));
            // every acknowledgement's outcome, those sent by poll and close() included
            consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
                Map<String, Object> event = Events.event("ack-result", name);
                Map<String, List<Long>> byPartition = new LinkedHashMap<>();
                offsets.forEach((tip, set) -> byPartition.put(
                        tip.topic() + "-" + tip.partition(), set.stream().sorted().toList()));
                event.put("offsets", byPartition);
                event.put("error", exception == null ? null : exception.getClass().getSimpleName());
                event.put("t", System.nanoTime());
                Events.emit(event);
            });
            try {
                consumer.subscribe(topics);
                while (!stopping) {
                    List<ConsumerRecord<String, String>> records = new java.util.ArrayList<>();
                    consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                    for (ConsumerRecord<String, String> record : records) emitRecord(record);
                    if (!explicit || records.isEmpty()) continue;
                    if (policy.equals("hold") && !held) {
                        if (holdMs == 0) {
                            hold();
                            break;
                        }
                        // held past its locks, then accepted (the broker may refuse that)
                        Events.emit(Events.event("holding", name));
                        pause(holdMs);
                        held = true;
                    }
                    Map<String, AcknowledgeType> types = new LinkedHashMap<>();
                    for (ConsumerRecord<String, String> record : records) {
                        AcknowledgeType type = decide(record);
                        consumer.acknowledge(record, type);
                        types.put(key(record), type);
                    }
                    long sent = System.nanoTime();
                    Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                    for (ConsumerRecord<String, String> record : records) {
                        Map<String, Object> event = coordinates(Events.event("acked", name), record);
                        event.put("type", types.get(key(record)).name());
                        event.put("sent", sent);
                        results.entrySet().stream()
                                .filter(e -> e.getKey().topic().equals(record.topic())
                                        && e.getKey().partition() == record.partition()
                                        && e.getValue().isPresent())
                                .findFirst()
                                .ifPresent(e -> event.put("error", e.getValue().get().getClass().getSimpleName()));
                        Events.emit(event);
                    }
                }
            } catch (WakeupException e) {
                // stop: fall through to close()
            } catch (RuntimeException e) {
                Events.emit(Events.failure("error", name, e));
            }
            try {
                // close() alone left the last poll's records unacknowledged in implicit mode in
                // about one run of ten, on Kafka 4.4 as on roster (no acknowledgement callback
                // fired, the records went back to the group): commit them first, as an
                // application that wants them accepted does
                if (!explicit) consumer.commitSync();
                consumer.close();
            } catch (RuntimeException e) {
                Events.emit(Events.failure("error", name, e));
            }
            Events.emit(Events.event("closed", name));
        }

        private AcknowledgeType decide(ConsumerRecord<String, String> record) {
            switch (policy) {
                case "release":
                    return AcknowledgeType.RELEASE;
                case "release-once":
                    return record.deliveryCount().orElse((short) 1) > 1 ? AcknowledgeType.ACCEPT
                            : AcknowledgeType.RELEASE;
                case "reject-marked":
                    return record.value() != null && record.value().startsWith("reject")
                            ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                case "renew": {
                    long now = System.nanoTime();
                    long first = firstSeen.computeIfAbsent(key(record), k -> now);
                    if ((now - first) / 1_000_000 >= holdMs) return AcknowledgeType.ACCEPT;
                    pause(renewEveryMs);   // the slow processing the renewals cover
                    return AcknowledgeType.RENEW;
                }
                default:
                    return AcknowledgeType.ACCEPT;
            }
        }

        private void pause(long ms) {
            synchronized (this) {
                long until = System.nanoTime() + ms * 1_000_000;
                while (!stopping && System.nanoTime() < until) {
                    try {
                        wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }

        private void hold() {
            Events.emit(Events.event("holding", name));
            synchronized (this) {
                while (!stopping) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }

        private static String key(ConsumerRecord<String, String> record) {
            return record.topic() + "-" + record.partition() + "@" + record.offset();
        }

        private Map<String, Object> coordinates(Map<String, Object> event, ConsumerRecord<String, String> record) {
            event.put("topic", record.topic());
            event.put("partition", record.partition());
            event.put("offset", record.offset());
            event.put("t", System.nanoTime());
            return event;
        }

        private void emitRecord(ConsumerRecord<String, String> record) {
            Map<String, Object> event = coordinates(Events.event("record", name), record);
            event.put("deliveryCount", record.deliveryCount().map(Short::intValue).orElse(null));
            event.put("key", record.key());
            event.put("value", record.value());
            Map<String, String> headers = new LinkedHashMap<>();
            for (Header header : record.headers()) {
                headers.put(header.key(), header.value() == null ? null
                        : new String(header.value(), StandardCharsets.UTF_8));
            }
            event.put("headers", headers);
            Events.emit(event);
        }
    }
}
