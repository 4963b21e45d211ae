%% The Erlang side of tests/dist.c: a node that connects to the ura node,
%% says hello to its registered actor `uratest`, and then does what the
%% ura side asks. Every answer goes back as {Tag, Values...} with atoms,
%% integers and pids only, so that it maps onto a ura message.
-module(dist_peer).
-export([start/1, start_bad/1]).

start(Ura) ->
    register(peer, self()),
    ok = connect(Ura, 300),
    {uratest, Ura} ! {hello, self()},
    loop(Ura).

%% With a wrong cookie: try to reach the ura node, print what happened,
%% and stay up a while so that ura can try to connect here too.
start_bad(Ura) ->
    io:format("ping: ~p~n", [net_adm:ping(Ura)]),
    timer:sleep(20000),
    halt(0).

connect(_, 0) -> error;
connect(Ura, N) ->
    case net_kernel:connect_node(Ura) of
        true -> ok;
        _ -> timer:sleep(100), connect(Ura, N - 1)
    end.

loop(Ura) ->
    receive
        {burst, To, N} ->
            burst(To, 1, N);
        {expect, From, N} ->
            Ok = expect(From, 1, N, 1),
            From ! {recvd, N, Ok};
        {calls, From, N} ->
            From ! {called, N, calls(Ura, 1, N, 1)};
        {watch, Pid, From} ->
            Ref = erlang:monitor(process, Pid),
            From ! watching,
            receive
                {'DOWN', Ref, process, Pid, Reason} -> From ! down_msg(erldown, Reason)
            after 30000 -> From ! {erldown, timeout, 0}
            end;
        {linkto, Pid, From} ->
            Self = self(),
            spawn(fun() ->
                          process_flag(trap_exit, true),
                          link(Pid),
                          From ! linked,
                          receive
                              {'EXIT', Pid, Reason} -> From ! down_msg(erlexit, Reason)
                          after 30000 -> From ! {erlexit, timeout, 0}
                          end,
                          Self ! done
                  end);
        {watchcount, Pid, From} ->
            Ref = erlang:monitor(process, Pid),
            From ! watching2,
            {R, N} = count_until(fun(M) -> case M of
                                                {'DOWN', Ref, process, Pid, Why} -> {done, Why};
                                                _ -> more
                                            end end, 0),
            From ! {erldown2, R, N};
        {linkcount, Pid, From} ->
            Self = self(),
            spawn(fun() ->
                          process_flag(trap_exit, true),
                          link(Pid),
                          From ! {linked2, self()},
                          {R, N} = count_until(fun(M) -> case M of
                                                             {'EXIT', Pid, Why} -> {done, Why};
                                                             _ -> more
                                                         end end, 0),
                          From ! {erlexit2, R, N},
                          Self ! done
                  end);
        {mkvictim, From} ->
            V = spawn(fun() -> receive never -> ok end end),
            From ! {victim, V};
        {kill, V, Reason} ->
            exit(V, Reason);
        {echo, From, X} ->
            From ! {echoed, X};
        {bigtest, From} ->
            bigloop(From, 0);
        {bigto, To, Blocks} ->
            To ! {bigin, binary:copy(block(), Blocks)};
        stop ->
            halt(0);
        _ ->
            ok
    end,
    loop(Ura).

down_msg(Tag, {A, V}) when is_atom(A), is_integer(V) -> {Tag, A, V};
down_msg(Tag, A) when is_atom(A) -> {Tag, A, 0};
down_msg(Tag, _) -> {Tag, other, 0}.

%% {tick, I} messages counted until the signal End matches: a signal
%% that overtook some of its sender's ticks leaves them uncounted.
count_until(End, N) ->
    receive
        {tick, _} -> count_until(End, N + 1);
        M -> case End(M) of
                 {done, Why} when is_atom(Why) -> {Why, N};
                 {done, _} -> {other, N};
                 more -> count_until(End, N)
             end
    after 30000 -> {timeout, N}
    end.

burst(_, I, N) when I > N -> ok;
burst(To, I, N) -> To ! {seq, I}, burst(To, I + 1, N).

%% In order, each once; an ack every 5000 lets the sender go on.
expect(_, I, N, Ok) when I > N -> Ok;
expect(From, I, N, Ok) ->
    receive
        {seq, J} ->
            case J rem 5000 of 0 -> From ! {ack, J}; _ -> ok end,
            expect(From, I + 1, N, case J of I -> Ok; _ -> 0 end)
    after 30000 -> 0
    end.

%% gen_server-like calls into the ura actor registered as calc.
calls(_, I, N, Ok) when I > N -> Ok;
calls(Ura, I, N, Ok) ->
    {calc, Ura} ! {call, self(), I, I * 3},
    receive
        {reply, I, R} -> calls(Ura, I + 1, N, case R of _ when R =:= I * 6 + 1 -> Ok; _ -> 0 end)
    after 10000 -> 0
    end.

%% A large message, and the small ones that may overtake it: how many did.
bigloop(From, Smalls) ->
    receive
        {small, _} -> bigloop(From, Smalls + 1);
        {big, B} ->
            Ok = case B =:= binary:copy(block(), byte_size(B) div 251) of true -> 1; false -> 0 end,
            From ! {bigok, byte_size(B), Ok, Smalls}
    after 30000 -> From ! {bigok, -1, 0, Smalls}
    end.

block() -> list_to_binary(lists:seq(0, 250)).
