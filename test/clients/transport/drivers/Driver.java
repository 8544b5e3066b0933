// Transport driver: the JDK's java.net.http.HttpClient over HTTP/1.1, the client Teku's external
// signer uses (sendAsync). Run as a single-file source program: `java Driver.java` (JDK 11+; the
// suite runs it under the machine's JDK 17). The JDK only, no libraries: the JSON reader and writer
// below cover the line protocol of protocol.mjs and nothing more.
//
// The JDK refuses a request that sets Connection unless jdk.httpclient.allowRestrictedHeaders
// names it, so the harness starts this with -Djdk.httpclient.allowRestrictedHeaders=connection
// for the Connection: close scenarios.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

public class Driver {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  // One client for the life of the process: its connection pool is what the harness exercises
  // across idle timeouts and restarts.
  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(TIMEOUT)
          .build();

  public static void main(String[] args) throws Exception {
    BufferedReader input =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream output = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    String line;
    while ((line = input.readLine()) != null) {
      if (line.isBlank()) continue;
      Map<String, Object> answer = new LinkedHashMap<>();
      try {
        @SuppressWarnings("unchecked")
        Map<String, Object> command = (Map<String, Object>) new Json(line).value();
        String op = (String) command.get("op");
        if ("exit".equals(op)) break;
        if ("version".equals(op)) {
          answer.put(
              "version",
              "java "
                  + Runtime.version()
                  + " ("
                  + System.getProperty("java.vendor")
                  + "), java.net.http.HttpClient HTTP/1.1");
        } else if ("batch".equals(op)) {
          answer.put("results", batch(command));
        } else {
          answer.put("error", "unknown op " + op);
        }
      } catch (Exception e) {
        answer.put("error", "driver: " + describe(e));
      }
      output.println(Json.write(answer));
    }
    System.exit(0);
  }

  @SuppressWarnings("unchecked")
  private static List<Object> batch(Map<String, Object> command) throws InterruptedException {
    String base = (String) command.get("base");
    List<Object> requests = (List<Object>) command.get("requests");
    boolean close = Boolean.TRUE.equals(command.get("close"));
    int concurrency = Math.max(1, ((Number) command.get("concurrency")).intValue());
    Semaphore slots = new Semaphore(concurrency);
    List<CompletableFuture<Map<String, Object>>> pending = new ArrayList<>();
    for (Object item : requests) {
      slots.acquire();
      CompletableFuture<Map<String, Object>> result;
      try {
        result = send(base, (Map<String, Object>) item, close);
      } catch (Exception e) {
        result = CompletableFuture.completedFuture(failure(e));
      }
      pending.add(result.whenComplete((value, error) -> slots.release()));
    }
    List<Object> results = new ArrayList<>();
    for (CompletableFuture<Map<String, Object>> future : pending) results.add(future.join());
    return results;
  }

  @SuppressWarnings("unchecked")
  private static CompletableFuture<Map<String, Object>> send(
      String base, Map<String, Object> request, boolean close) {
    String method = (String) request.get("method");
    Object body = request.get("body");
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(base + request.get("path")))
            .timeout(TIMEOUT)
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString((String) body));
    Map<String, Object> headers = (Map<String, Object>) request.get("headers");
    if (headers != null) {
      for (Map.Entry<String, Object> header : headers.entrySet()) {
        builder.header(header.getKey(), (String) header.getValue());
      }
    }
    if (close) builder.header("Connection", "close");
    return CLIENT
        .sendAsync(builder.build(), HttpResponse.BodyHandlers.ofString())
        .handle(
            (response, error) -> {
              if (error != null) return failure(error);
              Map<String, Object> result = new LinkedHashMap<>();
              result.put("status", response.statusCode());
              result.put("body", response.body());
              result.put("connection", response.headers().firstValue("connection").orElse(null));
              result.put("keepAlive", response.headers().firstValue("keep-alive").orElse(null));
              result.put("requestId", response.headers().firstValue("x-request-id").orElse(null));
              result.put("error", null);
              return result;
            });
  }

  private static Map<String, Object> failure(Throwable error) {
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("status", null);
    result.put("body", null);
    result.put("connection", null);
    result.put("keepAlive", null);
    result.put("requestId", null);
    result.put("error", describe(error));
    return result;
  }

  /** The exception and its causes, one after the other: "CompletionException: … <- IOException: …". */
  private static String describe(Throwable error) {
    StringBuilder text = new StringBuilder();
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (text.length() > 0) text.append(" <- ");
      text.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
    }
    return text.toString();
  }

  /** The JSON this protocol needs: objects, arrays, strings, numbers, true, false, null. */
  static final class Json {
    private final String text;
    private int at = 0;

    Json(String text) {
      this.text = text;
    }

    Object value() {
      Object value = parse();
      skipSpace();
      if (at != text.length()) throw error("trailing characters");
      return value;
    }

    private Object parse() {
      skipSpace();
      if (at >= text.length()) throw error("unexpected end");
      char c = text.charAt(at);
      switch (c) {
        case '{':
          return object();
        case '[':
          return array();
        case '"':
          return string();
        case 't':
          return literal("true", Boolean.TRUE);
        case 'f':
          return literal("false", Boolean.FALSE);
        case 'n':
          return literal("null", null);
        default:
          return number();
      }
    }

    private Map<String, Object> object() {
      Map<String, Object> map = new LinkedHashMap<>();
      at++;
      skipSpace();
      if (peek() == '}') {
        at++;
        return map;
      }
      for (; ; ) {
        skipSpace();
        String key = string();
        skipSpace();
        expect(':');
        map.put(key, parse());
        skipSpace();
        if (peek() == ',') {
          at++;
          continue;
        }
        expect('}');
        return map;
      }
    }

    private List<Object> array() {
      List<Object> list = new ArrayList<>();
      at++;
      skipSpace();
      if (peek() == ']') {
        at++;
        return list;
      }
      for (; ; ) {
        list.add(parse());
        skipSpace();
        if (peek() == ',') {
          at++;
          continue;
        }
        expect(']');
        return list;
      }
    }

    private String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      for (; ; ) {
        if (at >= text.length()) throw error("unterminated string");
        char c = text.charAt(at++);
        if (c == '"') return out.toString();
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = text.charAt(at++);
        switch (e) {
          case 'n':
            out.append('\n');
            break;
          case 't':
            out.append('\t');
            break;
          case 'r':
            out.append('\r');
            break;
          case 'b':
            out.append('\b');
            break;
          case 'f':
            out.append('\f');
            break;
          case 'u':
            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            at += 4;
            break;
          default:
            out.append(e); // \" \\ \/
        }
      }
    }

    private Object number() {
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
      if (start == at) throw error("unexpected character");
      String digits = text.substring(start, at);
      if (digits.contains(".") || digits.contains("e") || digits.contains("E")) {
        return Double.parseDouble(digits);
      }
      return Long.parseLong(digits);
    }

    private Object literal(String word, Object value) {
      if (!text.startsWith(word, at)) throw error("unexpected literal");
      at += word.length();
      return value;
    }

    private char peek() {
      if (at >= text.length()) throw error("unexpected end");
      return text.charAt(at);
    }

    private void expect(char c) {
      if (peek() != c) throw error("expected '" + c + "'");
      at++;
    }

    private void skipSpace() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
    }

    private IllegalArgumentException error(String what) {
      return new IllegalArgumentException("JSON: " + what + " at offset " + at);
    }

    static String write(Object value) {
      StringBuilder out = new StringBuilder();
      write(out, value);
      return out.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder out, Object value) {
      if (value == null) {
        out.append("null");
      } else if (value instanceof String) {
        quote(out, (String) value);
      } else if (value instanceof Number || value instanceof Boolean) {
        out.append(value);
      } else if (value instanceof Map) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, Object> entry : ((Map<String, Object>) value).entrySet()) {
          if (!first) out.append(',');
          first = false;
          quote(out, entry.getKey());
          out.append(':');
          write(out, entry.getValue());
        }
        out.append('}');
      } else if (value instanceof List) {
        out.append('[');
        boolean first = true;
        for (Object item : (List<Object>) value) {
          if (!first) out.append(',');
          first = false;
          write(out, item);
        }
        out.append(']');
      } else {
        quote(out, value.toString());
      }
    }

    private static void quote(StringBuilder out, String text) {
      out.append('"');
      for (int i = 0; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      out.append('"');
    }
  }
}
