"""The recommendation pruned to what the measurements back: each change the
ablation rounds measured within noise (or a loss) goes back to the start's
value, or the rounds' point that sends back the most of them; a single
change, or the whole, that measured no gain beyond noise keeps the start;
the whole winner when no part earns the gain on its own."""

from __future__ import annotations

from advisor.tuner.search.space import Value
from advisor.tuner.session.ablation_choice import measured_alone_only
from advisor.tuner.session.session_context import SessionContext, changed_names
from advisor.tuner.trial.objective import point_key


def drop_unearned(context: SessionContext, winner: dict[str, Value], ablations) -> tuple[dict[str, Value], list[str]]:
    """Each change whose measured effect is within noise (or a loss) goes
    back to the start's value, if the point stays free of lint errors.

    When two or more would go back, the point without all of them is one
    no round ran; see measured_pruning for the point recommended then."""
    measured = measured_pruning(context, winner, ablations)
    if measured is not None:
        return measured
    space = context.space
    point = dict(winner)
    notes = []
    for effect in ablations.reverted():
        candidate = dict(point)
        for member in effect.members:
            candidate[member] = ablations.advised.get(member, space.start[member])
        if context.lint is not None and context.lint.check(candidate).errors:
            continue
        point = candidate
        if len(effect.members) > 1:
            notes.append(f"{', '.join(effect.members)} {effect.back_to()} (the search's best point had "
                         f"{effect.winner_value}): the model saw no effect of each, and their measured effect "
                         f"together is {effect.verdict()}, {effect.sentence()}")
            continue
        notes.append(f"{effect.dimension} {effect.back_to()} (the search's best point had "
                     f"{effect.winner_value}): its measured effect{' against the advice' if effect.advised_by else ''}"
                     f" is {effect.verdict()}, {effect.sentence()}")
    return point, notes


def measured_pruning(context: SessionContext, winner: dict[str, Value],
                     ablations) -> tuple[dict[str, Value], list[str]] | None:
    """With two or more changes within noise (or a loss), the round's
    point that sends back the most of them and still beat the start
    beyond noise in the same rounds: (that point, the notes), or None. A
    point that keeps a change measured as a loss comes last: the no-switch
    session of 2026-11-28 12:55 kept MaxConnectionsPerChild 231,680
    (×0.92, 95 % CI ×0.85 to ×0.99) to send back a group of four within
    noise, where the round without it had measured higher than the
    winner.

    Changes can stand in for one another: each within noise when
    reverted alone, while reverting all of them loses the gain. The
    point without every one of them was never run; measured on its own
    (ten runs more) it missed the gain in three of the README's four
    sessions of 2026-11-27/28, which then fell back to the whole winner.
    A role of the rounds was run beside the start: recommending it keeps
    every figure measured, and sends back the largest share of what did
    not earn its place. A change that is recommended only with an
    ablation of its own (MEASURED_ALONE_ONLY, and the MPM) is never the
    one kept."""
    from advisor.tuner.session.ablation import role_without
    from advisor.tuner.session.gain import measure_gain

    space = context.space
    reverted = ablations.reverted()
    if len(reverted) < 2:
        return None
    options = []
    for effect in reverted:
        kept = [other for other in reverted if other is not effect]
        # The MPM is kept only on its own measure: a switch is a full
        # restart and another pool, and its ablation measured it within
        # noise. (The README's session of 2026-11-28 08:55: event with
        # the start's pool, and prefork with the winner's pool, both beat
        # the start by about a third.)
        if any(member == "MPM" or measured_alone_only(member, winner) for other in kept
               for member in other.members):
            continue
        point = ablations.point_of(role_without(effect.dimension), space.start)
        replicates = ablations.replicates_for(role_without(effect.dimension))
        if point is None or replicates is None or min(len(replicates.start), len(replicates.winner)) < 2:
            continue
        if context.lint is not None and context.lint.check(point).errors:
            continue
        try:
            gain = measure_gain(replicates)
        except ValueError:
            continue
        if gain.low is None or gain.low <= 1.0:
            continue
        keeps_no_loss = not any(other.a_loss for other in kept)
        options.append((keeps_no_loss, len(effect.members), gain.low, effect, kept, point, gain))
    if not options:
        return None
    *_, effect, kept, point, gain = max(options, key=lambda option: option[:3])
    together = len(effect.members) > 1
    notes = [f"{', '.join(effect.members)} {effect.back_to()} (the search's "
             f"best point had {effect.winner_value}): {'their' if together else 'its'} measured effect"
             f"{' together' if together else ''}{' against the advice' if effect.advised_by else ''} is "
             f"{effect.verdict()}, {effect.sentence()}"]
    for other in kept:
        notes.append(f"{', '.join(other.members)} {'keep' if len(other.members) > 1 else 'keeps'} the search's "
                     f"{other.winner_value} although {'their' if len(other.members) > 1 else 'its'} own measured "
                     f"effect is {other.verdict()}, {other.sentence()}: sending it back as well as "
                     f"{effect.dimension} would recommend a point no round ran (changes can stand in for one "
                     f"another), and the rounds measured the winner "
                     f"{'with ' + effect.against() if effect.advised_by else 'without ' + effect.dimension} at "
                     f"×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}) over the start")
    return dict(point), notes


def drop_single_within_noise(context: SessionContext, winner: dict[str, Value],
                             replicates) -> tuple[dict[str, Value], list[str]]:
    """With one change, the gain's replicates are its ablation: a change
    whose gain is within noise (or a loss) is not recommended."""
    space = context.space
    changed = changed_names(context.space, winner)
    gain = gain_not_beyond_noise(replicates) if len(changed) == 1 else None
    if gain is None:
        return winner, []
    name = changed[0]
    candidate = dict(winner)
    candidate[name] = space.start[name]
    if context.lint is not None and context.lint.check(candidate).errors:
        return winner, []
    interval = (f"95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}" if gain.low is not None and gain.high is not None
                else "no finite 95 % interval")
    return candidate, [f"{name} stays {space.value_text(name, space.as_written(space.start)[name])} (the search's best point had "
                       f"{space.value_text(name, winner[name])}): it was the only change, and its measured gain "
                       f"×{gain.ratio:.3f} ({interval}) is not beyond noise"]


def keep_start_without_a_gain(context: SessionContext, winner: dict[str, Value],
                              replicates) -> tuple[dict[str, Value], list[str]]:
    """The recommendation as a whole must beat the start in the interleaved
    runs: when the gain's 95 % interval does not lie above 1.0 (a loss,
    or within noise), the start is kept. Each change may have passed its
    own test (or, as an MPM switch lint cannot revert alone, had none),
    yet their sum measured ×0.968 (95 % CI ×0.951 to ×0.986) of the
    start in a session that recommended it all the same."""
    space = context.space
    gain = gain_not_beyond_noise(replicates) if point_key(space, winner) != point_key(space, space.start) else None
    if gain is None:
        return winner, []
    interval = (f"95 % CI ×{gain.low:.3f} to ×{gain.high:.3f}" if gain.low is not None and gain.high is not None
                else "no finite 95 % interval")
    verdict = ("a loss" if gain.high is not None and gain.high < 1.0 else "not beyond noise")
    return dict(space.start), [f"the starting config is kept: the recommendation as a whole measured "
                               f"×{gain.ratio:.3f} of it ({interval}), {verdict}"]


def whole_when_no_part_earns(context: SessionContext, winner: dict[str, Value], ablations):
    """(the rounds' winner, its replicates against the start, why) when the
    pruning left the start (every change within noise on its own, or the
    pruned point measured no gain) although the winner as a whole beat
    the start beyond noise in the same interleaved rounds; else None.

    Changes can stand in for one another (either of two would do), and
    then each is within noise when reverted alone while reverting both
    loses the gain: the whole is what was measured, so the whole is
    recommended, and the report says no single change carries it."""
    from advisor.tuner.session.ablation import WINNER
    from advisor.tuner.session.gain import measure_gain

    space = context.space
    if ablations is None or ablations.winner_point is None or point_key(space, winner) != point_key(space, space.start):
        return None
    if point_key(space, ablations.winner_point) == point_key(space, space.start):
        return None
    replicates = ablations.replicates_for(WINNER)
    if replicates is None or min(len(replicates.start), len(replicates.winner)) < 2:
        return None
    try:
        gain = measure_gain(replicates)
    except ValueError:
        return None
    if gain.low is None or gain.low <= 1.0:
        return None
    replicates.source = (f"the changes are kept together: none earned the gain when reverted on its own, but "
                         f"as a whole they measured ×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to "
                         f"×{gain.high:.2f}) over the starting config in the same interleaved rounds "
                         f"({len(replicates.start)} runs of each); no single change carries the gain")
    return dict(ablations.winner_point), replicates, replicates.source


def gain_not_beyond_noise(replicates):
    """The measured gain (advisor.tuner.session.gain.Gain) when its 95 %
    interval does not lie above 1.0, else None (a gain beyond noise, or too
    few runs to tell)."""
    from advisor.tuner.session.gain import measure_gain

    if min(len(replicates.start), len(replicates.winner)) < 2:
        return None
    try:
        gain = measure_gain(replicates)
    except ValueError:
        return None
    return None if gain.low is not None and gain.low > 1.0 else gain
