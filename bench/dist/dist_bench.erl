%% The Erlang side of bench/dist (README.md there): a node serving a sink,
%% an echo and a watcher under the name `bench`, and e2e/1, the
%% Erlang-to-Erlang client that bench/dist/run compares ura's with. Same
%% protocol both ways: the sink acks every 10000 messages and the sender
%% keeps at most 50000 unacknowledged, so neither side's queue grows
%% without bound. The watcher monitors a process of the client's node and
%% answers its 'DOWN' with the time it got it (os:system_time, which is
%% CLOCK_REALTIME, as the ura side's clock: one machine, one clock).
-module(dist_bench).
-export([serve/0, e2e/1]).

serve() ->
    register(bench, self()),
    loop().

loop() ->
    receive
        {ping, From, I} -> From ! {pong, I};
        {watch, From, Pid} ->
            Ref = erlang:monitor(process, Pid),
            From ! {watching, Pid},
            receive
                {'DOWN', Ref, process, _, _} ->
                    From ! {downat, os:system_time(nanosecond)}
            end;
        {sink, From, N} -> sink(From, 1, N);
        stop -> halt(0);
        _ -> ok
    end,
    loop().

sink(From, I, N) when I > N -> From ! {done, N};
sink(From, I, N) ->
    receive
        {seq, _} ->
            case I rem 10000 of 0 -> From ! {ack, I}; _ -> ok end,
            sink(From, I + 1, N)
    end.

%% e2e([PeerNode, N, K]): N one-way messages, then K round trips, then
%% K div 10 DOWNs: a local process the server monitors is told to exit,
%% and the time from that order to the server's receipt of its 'DOWN'.
e2e([PeerA, NA, KA]) ->
    Peer = list_to_atom(PeerA),
    N = list_to_integer(NA),
    K = list_to_integer(KA),
    true = net_kernel:connect_node(Peer),
    B = {bench, Peer},
    T0 = erlang:monotonic_time(nanosecond),
    B ! {sink, self(), N},
    send(B, 1, N, 0),
    receive {done, N} -> ok end,
    T1 = erlang:monotonic_time(nanosecond),
    Lat = lists:sort([rtt(B, I) || I <- lists:seq(1, K)]),
    P50 = lists:nth(max(1, K div 2), Lat),
    P99 = lists:nth(max(1, (K * 99) div 100), Lat),
    D = max(1, K div 10),
    Down = lists:sort([down(B) || _ <- lists:seq(1, D)]),
    D50 = lists:nth(max(1, D div 2), Down),
    D99 = lists:nth(max(1, (D * 99) div 100), Down),
    io:format("bench=dist system=erlang n=~p rate=~p rtt_p50_us=~.1f rtt_p99_us=~.1f"
              " down_p50_us=~.1f down_p99_us=~.1f~n",
              [N, round(N * 1.0e9 / (T1 - T0)), P50 / 1000, P99 / 1000,
               D50 / 1000, D99 / 1000]),
    halt(0).

down(B) ->
    P = spawn(fun() -> receive die -> exit(die) end end),
    B ! {watch, self(), P},
    receive {watching, P} -> ok end,
    T = os:system_time(nanosecond),
    P ! die,
    receive {downat, T2} -> T2 - T end.

send(_, I, N, _) when I > N -> ok;
send(B, I, N, Acked) when I - Acked > 50000 ->
    receive {ack, A} -> send(B, I, N, A) end;
send(B, I, N, Acked) ->
    B ! {seq, I},
    send(B, I + 1, N, Acked).

rtt(B, I) ->
    T = erlang:monotonic_time(nanosecond),
    B ! {ping, self(), I},
    receive {pong, I} -> erlang:monotonic_time(nanosecond) - T end.
