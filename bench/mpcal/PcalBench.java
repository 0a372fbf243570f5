// PcalBench times the reference PlusCal translator (pcal.trans, from the
// TLA+ tools jar) translating PlusCal modules to TLA+ many times in one
// JVM, for `strata bench mpcal`. It is compiled at run time against the
// jar (bench/mpcal/driver.go) and driven over stdin, one command a line:
//
//   load ID PATH   read the PlusCal module at PATH and translate it once;
//                  answers {"load":ID,"sha256":...,"in_lines":..,"out_lines":..}
//   run ID N       translate module ID N times; answers {"run":ID,"ns":[...]},
//                  each element one translation's wall time in nanoseconds
//
// Any failure answers {"error":...}. The first line printed is the ready
// line {"ready":true,...} with the Java and translator versions.
//
// One translation is what the pcal.trans command does to the file minus
// the file I/O and the JVM start: new pcal.Translator(text, {"-nocfg",
// PATH}) (which resets the translator's static state: ToolIO,
// PcalParams.resetParams, a fresh TLA+-to-PlusCal mapping, the argument
// processing) then translate() and getOutput(), the whole module with the
// TLA+ translation in place. Translator is the translator's public
// in-process entry point; unlike pcal.trans.main it never calls
// System.exit. Every run's output is compared with the first (outside the
// timed part): a difference would mean state left over from an earlier run.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class PcalBench {
    private static final Map<String, String> inputs = new HashMap<>();
    private static final Map<String, String> paths = new HashMap<>();
    private static final Map<String, String> outputs = new HashMap<>();

    public static void main(String[] args) throws Exception {
        System.out.println("{\"ready\":true,\"java\":" + q(System.getProperty("java.version"))
                + ",\"vm\":" + q(System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"))
                + ",\"pcal\":" + q("pcal.trans " + pcal.PcalParams.version + " of " + pcal.PcalParams.modDate) + "}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ", 3);
            try {
                if (f.length == 3 && f[0].equals("load")) {
                    load(f[1], f[2]);
                } else if (f.length == 3 && f[0].equals("run")) {
                    run(f[1], Integer.parseInt(f[2]));
                } else if (!line.trim().isEmpty()) {
                    fail("unknown command " + line);
                }
            } catch (Throwable t) {
                fail(f[0] + " " + (f.length > 1 ? f[1] : "") + ": " + t);
            }
            System.out.flush();
        }
    }

    private static void load(String id, String path) throws Exception {
        String text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
        String out = translate(text, path);
        inputs.put(id, text);
        paths.put(id, path);
        outputs.put(id, out);
        System.out.println("{\"load\":" + q(id) + ",\"sha256\":" + q(sha256(out))
                + ",\"in_lines\":" + lines(text) + ",\"out_lines\":" + lines(out) + "}");
    }

    private static void run(String id, int n) throws Exception {
        String text = inputs.get(id);
        if (text == null) {
            fail("run " + id + ": not loaded");
            return;
        }
        String path = paths.get(id), want = outputs.get(id);
        long[] ns = new long[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            String out = translate(text, path);
            ns[i] = System.nanoTime() - t0;
            if (!out.equals(want)) {
                fail("run " + id + ": translation " + (i + 1) + " differs from the first");
                return;
            }
        }
        StringBuilder b = new StringBuilder("{\"run\":" + q(id) + ",\"ns\":[");
        for (int i = 0; i < n; i++) {
            b.append(i > 0 ? "," : "").append(ns[i]);
        }
        System.out.println(b.append("]}"));
    }

    // translate is one pcal.trans -nocfg translation of text, in memory.
    private static String translate(String text, String path) throws Exception {
        pcal.Translator t = new pcal.Translator(text, new String[] {"-nocfg", path});
        boolean ok = t.translate(new pcal.ValidationCallBack.Noop());
        String out = t.getOutput();
        if (!ok || out == null) {
            StringBuilder msg = new StringBuilder("pcal.trans failed:");
            List<pcal.Translator.Error> errs = t.getErrors();
            for (pcal.Translator.Error e : errs) {
                msg.append(' ').append(e);
            }
            throw new Exception(msg.toString());
        }
        return out;
    }

    private static int lines(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == '\n') {
                n++;
            }
        }
        return n;
    }

    private static String sha256(String s) throws Exception {
        byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        StringBuilder b = new StringBuilder();
        for (byte x : d) {
            b.append(String.format("%02x", x));
        }
        return b.toString();
    }

    private static void fail(String msg) {
        System.out.println("{\"error\":" + q(msg) + "}");
    }

    // q quotes s as a JSON string.
    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
