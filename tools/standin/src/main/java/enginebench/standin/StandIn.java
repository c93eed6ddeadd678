package enginebench.standin;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.ServerVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.bson.Document;

/**
 * The stand-in wire-protocol server for the TARGET=uri tests: mongo-java-server with its on-disk
 * H2 MVStore backend, listening on 127.0.0.1 only.
 *
 * <pre>java -jar enginebench-standin.jar --dbpath DIR [--port N]</pre>
 *
 * --port 0 (the default) takes a free port. Once listening it prints "port N" on stdout, so the
 * caller learns the port without guessing one. It stops on SIGTERM or when its stdin closes: a
 * caller that dies without stopping it (its end of the pipe closes) leaves no server behind.
 */
public final class StandIn {

    /** What serverStatus.process says: a mongod says "mongod", so reports can tell it is not one. */
    static final String PROCESS = "mongo-java-server " + libraryVersion() + " (H2 MVStore backend)";

    private StandIn() {
    }

    public static void main(String[] args) throws Exception {
        String dbpath = null;
        int port = 0;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--dbpath") && i + 1 < args.length) {
                dbpath = args[++i];
            } else if (arg.equals("--port") && i + 1 < args.length) {
                port = Integer.parseInt(args[++i]);
            } else {
                usage("unknown argument: " + arg);
            }
        }
        if (dbpath == null) {
            usage("--dbpath is required");
        }
        Path folder = Path.of(dbpath);
        Files.createDirectories(folder);

        H2Backend backend = new StandInBackend(folder.resolve("standin.mv.db").toString());
        // MONGO_5_0 is the newest mode 1.47.0 has; it announces wire version 8 (ServerVersion.java).
        backend.version(ServerVersion.MONGO_5_0);
        MongoServer server = new MongoServer(backend);
        try {
            server.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        } catch (RuntimeException e) {
            System.err.println("stand-in: cannot listen on 127.0.0.1:" + port + ": " + e);
            System.exit(48);  // mongod's exit code for a network error (EXIT_NET_ERROR)
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "stand-in shutdown"));
        System.out.println("port " + server.getLocalAddress().getPort());
        System.out.flush();

        waitForEndOfInput(System.in);
        System.exit(0);  // runs the shutdown hook: clients closed, the MVStore file closed
    }

    private static void waitForEndOfInput(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // nothing is expected on stdin; only its end matters
            }
        } catch (IOException e) {
            // a broken pipe is an end too
        }
    }

    /** The mongo-java-server version this was built against (standin.properties, filled by Maven). */
    private static String libraryVersion() {
        Properties properties = new Properties();
        try (InputStream in = StandIn.class.getResourceAsStream("/standin.properties")) {
            properties.load(in);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("standin.properties is missing from the jar; rebuild it with make standin", e);
        }
        return properties.getProperty("mongo-java-server.version");
    }

    private static void usage(String problem) {
        System.err.println("stand-in: " + problem + "; usage: java -jar enginebench-standin.jar --dbpath DIR [--port N]");
        System.exit(2);
    }

    /** The H2 backend, naming itself in serverStatus.process. */
    static final class StandInBackend extends H2Backend {
        StandInBackend(String fileName) {
            super(fileName);
        }

        @Override
        public Document getServerStatus() {
            Document status = super.getServerStatus();
            status.put("process", PROCESS);
            return status;
        }
    }
}
