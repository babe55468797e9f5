"""Which data type (command group) a command belongs to: the groups of redis-benchmarks-specification
(``string``, ``hash``, ``list``, ``set``, ``sorted-set``, ``stream``, ``bitmap``, ``hyperloglog``,
``geo``, ``scripting``, ``transactions``, ``pubsub``, ``generic``, ``connection``, ``server``).

A catalog series carries its spec's ``tested-groups``; every other series (valkey-benchmark's
``-t`` tests, memtier's SET/GET) is grouped by its command name with this table. A command not
listed is ``other``.
"""

from __future__ import annotations

_BY_GROUP = {
    "string": "set get mset mget msetnx incr incrby incrbyfloat decr decrby append strlen getrange setrange getset "
              "getdel getex setex psetex setnx lcs substr",
    "hash": "hset hget hmset hmget hgetall hdel hexists hincrby hincrbyfloat hkeys hvals hlen hsetnx hstrlen hscan "
            "hrandfield hsetex hgetex hexpire hpexpire hexpireat httl hpttl hpersist",
    "list": "lpush rpush lpop rpop lrange lindex linsert llen lrem lset ltrim lpos lmove blmove brpop blpop "
            "rpoplpush brpoplpush lpushx rpushx lmpop blmpop lrange_100 lrange_300 lrange_500 lrange_600",
    "set": "sadd spop srem smembers sismember smismember scard srandmember sdiff sinter sunion sdiffstore "
           "sinterstore sunionstore sintercard smove sscan",
    "sorted-set": "zadd zpopmin zpopmax zrange zrangebyscore zrevrange zrevrangebyscore zrank zrevrank zscore "
                  "zincrby zcard zcount zrem zremrangebyscore zremrangebyrank zunionstore zinterstore zscan "
                  "zrangestore zmscore bzpopmin bzpopmax zrandmember zdiff zinter zunion zlexcount zrangebylex",
    "stream": "xadd xrange xrevrange xread xreadgroup xlen xack xclaim xautoclaim xdel xtrim xgroup xinfo xpending",
    "bitmap": "setbit getbit bitcount bitpos bitop bitfield bitfield_ro",
    "hyperloglog": "pfadd pfcount pfmerge",
    "geo": "geoadd geopos geodist geohash georadius georadiusbymember geosearch geosearchstore",
    "scripting": "eval evalsha eval_ro evalsha_ro fcall fcall_ro function script",
    "transactions": "multi exec discard watch unwatch",
    "pubsub": "publish subscribe psubscribe spublish ssubscribe pubsub",
    "generic": "del unlink exists expire pexpire expireat pexpireat ttl pttl persist type rename renamenx keys scan "
               "sort sort_ro copy dump restore touch object randomkey move",
    "connection": "ping ping_inline ping_mbulk hello echo auth select client",
    "server": "time info config dbsize flushall flushdb",
}
COMMAND_GROUPS: dict[str, str] = {command: group for group, names in _BY_GROUP.items() for command in names.split()}
UNKNOWN = "other"


def command_group(command: str) -> str:
    """``SET`` -> string, ``lrange_100`` -> list, ``ZPOPMIN`` -> sorted-set; ``other`` when unknown."""
    name = str(command).lower()
    return COMMAND_GROUPS.get(name, COMMAND_GROUPS.get(name.split("_")[0], UNKNOWN))


def series_group(dims: dict) -> str:
    """The data type of a series: its catalog spec's first tested group, else its command's group."""
    catalog = dims.get("catalog")
    if isinstance(catalog, dict) and catalog.get("groups"):
        return str(catalog["groups"][0])
    return command_group(dims.get("command", ""))
