package roster.judge;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/** One JSON object a line on stdout: what the tests read. Every thread writes through here. */
final class Events {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = System.out;

    private Events() {}

    static Map<String, Object> event(String kind, String member) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("event", kind);
        if (member != null) event.put("member", member);
        return event;
    }

    static synchronized void emit(Map<String, Object> event) {
        try {
            OUT.println(JSON.writeValueAsString(event));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
        OUT.flush();
    }

    /** "topic-partition" strings, sorted, so a test compares assignments as lists. */
    static List<String> partitions(Collection<TopicPartition> partitions) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : partitions) names.add(tp.topic() + "-" + tp.partition());
        names.sort(null);
        return names;
    }

    static Map<String, Object> failure(String kind, String member, Throwable error) {
        Throwable cause = error.getCause() != null && error instanceof java.util.concurrent.ExecutionException
                ? error.getCause() : error;
        Map<String, Object> event = event(kind, member);
        event.put("error", cause.getClass().getSimpleName());
        event.put("message", String.valueOf(cause.getMessage()));
        return event;
    }
}
