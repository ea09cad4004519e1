import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * JDBC (pgjdbc) against clinksql serve: the scenario of scenario_test.go, checked in JDBC's types.
 *
 * <p>Usage: java -Duser.timezone=UTC -cp .:postgresql.jar ClientTest HOST PORT. Prints what it checked and exits 0,
 * or prints every mismatch and exits 1. pgjdbc uses the extended protocol throughout; the insert runs six times,
 * so it goes from unnamed statements to a named server-side prepared statement (prepareThreshold 5).
 */
public class ClientTest {
    static final List<String> failures = new ArrayList<>();

    static void check(String what, Object got, Object want) {
        if (got == null ? want != null : !got.equals(want)) {
            failures.add(what + ": got " + got + ", want " + want);
        }
    }

    static Timestamp ts(String s) {
        return Timestamp.valueOf(s);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/clinksql";
        Properties props = new Properties();
        props.setProperty("user", "clinksql");
        props.setProperty("connectTimeout", "10");
        props.setProperty("socketTimeout", "60");
        int checked = 0;
        try (Connection c = DriverManager.getConnection(url, props)) {
            Statement st = c.createStatement();
            st.execute("CREATE STREAM clicks (user_id BIGINT, url VARCHAR, amount DECIMAL(10,2), ts TIMESTAMP(3), "
                    + "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)");
            // CREATE MATERIALIZED VIEW returns no result set, and the new job's id as a notice (a warning).
            st.clearWarnings();
            check("CREATE MATERIALIZED VIEW returns no result set", st.execute("CREATE MATERIALIZED VIEW per_url AS "
                    + "SELECT url, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total, MAX(ts) AS last_ts, "
                    + "MAX(user_id) AS top_user FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
                    + "GROUP BY url, window_start, window_end"), false);
            check("job id notice", st.getWarnings() != null && st.getWarnings().getMessage().startsWith("started job job-"), true);

            try (PreparedStatement ps = c.prepareStatement("INSERT INTO clicks VALUES (?, ?, ?, ?)")) {
                // Asked before any value is set: the server infers each parameter's type from its target column.
                ParameterMetaData pm = ps.getParameterMetaData();
                check("parameter count", pm.getParameterCount(), 4);
                check("$1 type", pm.getParameterType(1), Types.BIGINT);
                check("$2 type", pm.getParameterType(2), Types.VARCHAR);
                check("$3 type", pm.getParameterType(3), Types.NUMERIC);
                check("$4 type", pm.getParameterType(4), Types.TIMESTAMP);
                Object[][] rows = {
                    {1L, "a", "1.50", "2026-01-01 00:00:01"},
                    {2L, "b", "2.25", "2026-01-01 00:00:03"},
                    {1L, "a", "3.00", "2026-01-01 00:00:07.25"},
                    {3L, "a", "0.75", "2026-01-01 00:00:12"},
                    {2L, "b", "10.00", "2026-01-01 00:00:15"},
                    {1L, "c", "5.00", "2026-01-01 00:00:35"},
                };
                for (Object[] r : rows) {
                    ps.setLong(1, (Long) r[0]);
                    ps.setString(2, (String) r[1]);
                    ps.setBigDecimal(3, new BigDecimal((String) r[2]));
                    ps.setTimestamp(4, ts((String) r[3]));
                    check("insert count " + r[3], ps.executeUpdate(), 1);
                }
            }

            check("FLUSH returns no result set", st.execute("FLUSH"), false);

            String q = "SELECT url, window_start, window_end, n, total, last_ts, top_user FROM per_url "
                    + "ORDER BY window_start, url";
            // Derived by hand (scenario_test.go): the watermark (00:00:34) fired [00:00, 00:10) and [00:10, 00:20).
            Object[][] want = {
                {"a", "2026-01-01 00:00:00", "2026-01-01 00:00:10", 2L, "4.50", "2026-01-01 00:00:07.25", 1L},
                {"b", "2026-01-01 00:00:00", "2026-01-01 00:00:10", 1L, "2.25", "2026-01-01 00:00:03", 2L},
                {"a", "2026-01-01 00:00:10", "2026-01-01 00:00:20", 1L, "0.75", "2026-01-01 00:00:12", 3L},
                {"b", "2026-01-01 00:00:10", "2026-01-01 00:00:20", 1L, "10.00", "2026-01-01 00:00:15", 2L},
            };
            try (PreparedStatement ps = c.prepareStatement(q); ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                check("column count", md.getColumnCount(), 7);
                String[] names = {"url", "window_start", "window_end", "n", "total", "last_ts", "top_user"};
                int[] types = {Types.VARCHAR, Types.TIMESTAMP, Types.TIMESTAMP, Types.BIGINT, Types.NUMERIC,
                    Types.TIMESTAMP, Types.BIGINT};
                String[] typeNames = {"varchar", "timestamp", "timestamp", "int8", "numeric", "timestamp", "int8"};
                for (int i = 1; i <= 7; i++) {
                    check("column " + i + " name", md.getColumnLabel(i), names[i - 1]);
                    check("column " + i + " type", md.getColumnType(i), types[i - 1]);
                    check("column " + i + " type name", md.getColumnTypeName(i), typeNames[i - 1]);
                }
                int i = 0;
                while (rs.next()) {
                    if (i < want.length) {
                        Object[] w = want[i];
                        String row = "row " + i + " ";
                        check(row + "url", rs.getString(1), w[0]);
                        check(row + "window_start", rs.getTimestamp(2), ts((String) w[1]));
                        check(row + "window_end", rs.getTimestamp(3), ts((String) w[2]));
                        check(row + "n", rs.getLong(4), w[3]);
                        // equals, not compareTo: the scale must come back too (4.50, not 4.5).
                        check(row + "total", rs.getBigDecimal(5), new BigDecimal((String) w[4]));
                        check(row + "last_ts", rs.getTimestamp(6), ts((String) w[5]));
                        check(row + "top_user", rs.getLong(7), w[6]);
                        check(row + "getObject(n) class", rs.getObject(4).getClass().getName(), "java.lang.Long");
                        check(row + "getObject(total) class", rs.getObject(5).getClass().getName(),
                                "java.math.BigDecimal");
                        check(row + "getObject(window_start) class", rs.getObject(2).getClass().getName(),
                                "java.sql.Timestamp");
                        check(row + "getObject(url) class", rs.getObject(1).getClass().getName(), "java.lang.String");
                    }
                    i++;
                }
                check("row count", i, want.length);
                checked = i;
            }

            // An error carries its SQLSTATE; the connection stays usable.
            try {
                st.executeQuery("SELECT nope FROM per_url");
                failures.add("SELECT nope: no error");
            } catch (SQLException e) {
                check("SELECT nope SQLSTATE", e.getSQLState(), "42703");
            }
            try (ResultSet rs = st.executeQuery("SELECT 1")) {
                check("SELECT 1 after an error", rs.next() && rs.getInt(1) == 1, true);
            }
        }
        if (!failures.isEmpty()) {
            for (String f : failures) {
                System.out.println(f);
            }
            System.exit(1);
        }
        System.out.println("JDBC " + org.postgresql.util.DriverInfo.DRIVER_FULL_NAME + ": " + checked + " rows checked");
    }
}
