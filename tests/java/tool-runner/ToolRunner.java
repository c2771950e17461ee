import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs main classes of Kafka's tools (the classes behind bin/kafka-*.sh) one after another in
 * this one JVM, so that a test's tool call costs milliseconds instead of a JVM start.
 *
 * <p>Protocol, one request a line on stdin: tab-separated base64 fields (the tool's stdin, the
 * main class, its arguments); one answer a line on the real stdout:
 * {@code EXIT <code> <base64 stdout> <base64 stderr>}.
 *
 * <p>What a call prints is what the tool's own JVM would print: System.out and System.err are
 * routed per call (threads the call starts inherit its capture, so a client thread it leaves
 * behind cannot write into a later call's output); Kafka's Exit ends the call as it would end
 * the process: the first exit code wins and nothing printed after it counts, except by the
 * shutdown hooks it registered, which run then, as the JVM runs them at exit. An exception
 * out of main prints as the JVM prints it and exits 1.
 */
public final class ToolRunner {
    private static final PrintStream REPLY = new PrintStream(
        new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    private static final OutputStream REAL_ERR = new FileOutputStream(FileDescriptor.err);
    private static final InheritableThreadLocal<Call> CALL = new InheritableThreadLocal<>();
    private static final InheritableThreadLocal<Boolean> HOOK = new InheritableThreadLocal<>();
    private static Constructor<?> TOOL_THREAD;

    /** What one tool call has printed, and how it ended. */
    static final class Call {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final List<Map.Entry<String, Runnable>> hooks = new ArrayList<>();
        volatile Integer exitCode;   // set by the first Exit.exit/halt
        volatile boolean over;       // the call has answered: later writes are dropped
    }

    /** Thrown by Exit.exit/halt to unwind the tool's thread as the process would end. */
    static final class ExitError extends Error {
        ExitError() {
            super("exit", null, false, false);
        }
    }

    /** System.out or System.err: each write goes to the writing thread's call. */
    static final class Route extends OutputStream {
        private final boolean isErr;

        Route(boolean isErr) {
            this.isErr = isErr;
        }

        private OutputStream target() {
            Call call = CALL.get();
            if (call == null) {
                return isErr ? REAL_ERR : OutputStream.nullOutputStream();
            }
            boolean hook = Boolean.TRUE.equals(HOOK.get());
            if (call.over || (call.exitCode != null && !hook)) {
                return OutputStream.nullOutputStream();
            }
            return isErr ? call.err : call.out;
        }

        @Override
        public void write(int b) {
            OutputStream target = target();
            synchronized (target) {
                try {
                    target.write(b);
                } catch (java.io.IOException e) {
                    // a ByteArrayOutputStream or the null stream: never thrown
                }
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            OutputStream target = target();
            synchronized (target) {
                try {
                    target.write(b, off, len);
                } catch (java.io.IOException e) {
                    // as above
                }
            }
        }
    }

    private static void exitProcedure(int code, String message) {
        Call call = CALL.get();
        if (call != null && call.exitCode == null) {
            call.exitCode = code;
        }
        throw new ExitError();
    }

    public static void main(String[] args) throws Exception {
        // The tools' own JVM writes in the platform's encoding, as these streams do.
        String encoding = System.getProperty("stdout.encoding", System.getProperty(
            "sun.stdout.encoding", System.getProperty("file.encoding")));
        System.setOut(new PrintStream(new Route(false), true, encoding));
        System.setErr(new PrintStream(new Route(true), true, encoding));
        TOOL_THREAD = toolThread();
        Exit.setExitProcedure(ToolRunner::exitProcedure);
        Exit.setHaltProcedure(ToolRunner::exitProcedure);
        Exit.setShutdownHookAdder((name, hook) -> {
            Call call = CALL.get();
            if (call != null) {
                synchronized (call.hooks) {
                    call.hooks.add(Map.entry(name, hook));
                }
            }
        });
        BufferedReader requests = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder decoder = Base64.getDecoder();
        REPLY.println("READY");
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            String[] decoded = new String[fields.length];
            for (int i = 0; i < fields.length; i++) {
                decoded[i] = new String(decoder.decode(fields[i]), StandardCharsets.UTF_8);
            }
            byte[] stdin = decoder.decode(fields[0]);
            Call call = run(stdin, decoded[1], Arrays.copyOfRange(decoded, 2, decoded.length));
            Base64.Encoder encoder = Base64.getEncoder();
            REPLY.println("EXIT " + call.exitCode
                          + " " + encoder.encodeToString(call.out.toByteArray())
                          + " " + encoder.encodeToString(call.err.toByteArray()));
        }
        // stdin closed: done, whatever threads the tools left behind
        Runtime.getRuntime().halt(0);
    }

    /** ToolThread, defined as a hidden class: the JVM leaves hidden frames out of stack traces,
     * so a trace the tool prints ends at its main, as on the JVM's own main thread. */
    private static Constructor<?> toolThread() throws Exception {
        byte[] bytes;
        try (InputStream in = ToolRunner.class.getResourceAsStream("/ToolThread.class")) {
            bytes = in.readAllBytes();
        }
        Class<?> hidden = MethodHandles.lookup().defineHiddenClass(bytes, true).lookupClass();
        return hidden.getConstructor(MethodHandle.class, String[].class, Consumer.class);
    }

    private static Call run(byte[] stdin, String mainClass, String[] args) throws Exception {
        Call call = new Call();
        System.setIn(new ByteArrayInputStream(stdin));
        Consumer<Throwable> ended = e -> {
            if (!(e instanceof ExitError) && call.exitCode == null) {
                // what the JVM's default handler prints for an uncaught exception in main
                System.err.print("Exception in thread \"main\" ");
                e.printStackTrace(System.err);
                call.exitCode = 1;
            }
        };
        // threads made here inherit the call's capture (an InheritableThreadLocal)
        CALL.set(call);
        try {
            Thread thread;
            try {
                MethodHandle main = MethodHandles.publicLookup().findStatic(
                    Class.forName(mainClass), "main",
                    MethodType.methodType(void.class, String[].class));
                thread = (Thread) TOOL_THREAD.newInstance(main, args, ended);
            } catch (ReflectiveOperationException e) {
                System.err.println("Error: Could not find or load main class " + mainClass);
                System.err.println("Caused by: " + e);
                call.exitCode = 1;
                thread = null;
            }
            if (thread != null) {
                thread.start();
                thread.join();
            }
            if (call.exitCode == null) {
                call.exitCode = 0;
            }
            // the JVM runs the hooks at exit, each in its thread, as Kafka's Exit registers them
            HOOK.set(Boolean.TRUE);
            List<Thread> hooks = new ArrayList<>();
            synchronized (call.hooks) {
                for (Map.Entry<String, Runnable> hook : call.hooks) {
                    Thread t = new Thread(hook.getValue(), hook.getKey());
                    hooks.add(t);
                    t.start();
                }
            }
            for (Thread t : hooks) {
                t.join(30_000);
            }
        } finally {
            CALL.remove();
            HOOK.remove();
        }
        System.out.flush();
        System.err.flush();
        call.over = true;
        return call;
    }
}

/** The thread a tool's main runs on, named "main" as the JVM's own; see ToolRunner.toolThread. */
final class ToolThread extends Thread {
    private final MethodHandle main;
    private final String[] args;
    private final Consumer<Throwable> ended;

    public ToolThread(MethodHandle main, String[] args, Consumer<Throwable> ended) {
        super("main");
        this.main = main;
        this.args = args;
        this.ended = ended;
    }

    @Override
    public void run() {
        try {
            main.invokeExact(args);
        } catch (Throwable e) {
            ended.accept(e);
        }
    }
}
