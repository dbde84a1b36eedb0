# Thrift service of the test harness thrift_server.cc (tests/servers).
namespace cpp crossfree.servers
service Calculator {
  i64 add(1: i64 a, 2: i64 b)
  string echo(1: string text)
  oneway void shutdown()
}
