package topicfs.interop;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

/** Tiny "--name value" / "--name=value" / "--flag" parser and JSON helpers shared by the tools. */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    Args(String[] argv, String usage, String... flags) {
        java.util.Set<String> flagSet = new java.util.HashSet<>(java.util.Arrays.asList(flags));
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println(usage);
                System.exit(0);
            }
            if (!a.startsWith("--")) fail(usage, "unexpected argument: " + a);
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (flagSet.contains(name)) {
                value = "true";
            } else {
                if (i + 1 >= argv.length) fail(usage, "missing value for --" + name);
                value = argv[++i];
            }
            values.put(name, value);
        }
    }

    static void fail(String usage, String msg) {
        System.err.println("error: " + msg);
        System.err.println(usage);
        System.exit(2);
    }

    String get(String name, String def) {
        return values.getOrDefault(name, def);
    }

    String require(String name, String usage) {
        String v = values.get(name);
        if (v == null) fail(usage, "--" + name + " is required");
        return v;
    }

    long getLong(String name, long def) {
        String v = values.get(name);
        return v == null ? def : Long.parseLong(v);
    }

    int getInt(String name, int def) {
        String v = values.get(name);
        return v == null ? def : Integer.parseInt(v);
    }

    boolean flag(String name) {
        String v = values.get(name);
        return v != null && !v.equals("false");
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    static String b64(byte[] b) {
        return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\"";
    }

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
