%% sup_restart for Erlang/OTP: the peer of bench/sup_restart.c. A
%% one_for_one supervisor (OTP's own) with one permanent child; the driver
%% (the main process) sends the child `crash`, the child exits with reason
%% boom, the supervisor restarts it, and the new child's first act is
%% {up, self()} to the driver: one round. The supervisor's report of each
%% restart is silenced (logger level none): ura logs nothing either.
%% usage: erlc sup_restart.erl && erl -noshell -run sup_restart main [N]
-module(sup_restart).
-behaviour(supervisor).
-export([main/1, init/1, start_kid/1]).

start_kid(Driver) ->
    {ok, spawn_link(fun() -> Driver ! {up, self()}, receive crash -> exit(boom) end end)}.

init(Driver) ->
    {ok, {#{strategy => one_for_one, intensity => 1000000000, period => 1},
          [#{id => kid, start => {?MODULE, start_kid, [Driver]},
             restart => permanent, shutdown => brutal_kill}]}}.

rounds(0, _Kid, Lat) -> Lat;
rounds(N, Kid, Lat) ->
    T = erlang:monotonic_time(nanosecond),
    Kid ! crash,
    receive {up, New} ->
        rounds(N - 1, New, [erlang:monotonic_time(nanosecond) - T | Lat])
    end.

main(Args) ->
    N = case Args of [S | _] -> list_to_integer(S); [] -> 200000 end,
    logger:set_primary_config(level, none),
    process_flag(trap_exit, true),
    T0 = erlang:monotonic_time(nanosecond),
    {ok, Sup} = supervisor:start_link(?MODULE, self()),
    Kid = receive {up, K} -> K end,
    Lat = lists:sort(rounds(N, Kid, [])),
    T1 = erlang:monotonic_time(nanosecond),
    [{specs, 1}, {active, 1}, _, _] = supervisor:count_children(Sup),
    Wall = (T1 - T0) / 1.0e9,
    io:format("bench=sup_restart system=erlang schedulers=~b n=~b wall_s=~.3f rate=~b "
              "ns_per_round=~b p50_ns=~b p99_ns=~b~n",
              [erlang:system_info(schedulers_online), N, Wall, round(N / Wall),
               round(Wall * 1.0e9 / N), lists:nth(N div 2, Lat), lists:nth(N * 99 div 100, Lat)]),
    erlang:halt(0).
