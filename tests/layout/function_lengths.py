#!/usr/bin/env python3
"""Lists the functions of C++ sources with their length in lines.

A function's length is the count of physical lines from the first line of
its declaration (template<> line included) to its closing brace, comments
and blank lines included: what a reader has to hold at once. Lambdas and
local classes count toward the function that holds them.

The scan is lexical, not a compiler: comments, string/char literals and
preprocessor lines are blanked, then braces are matched. A '{' outside any
function opens a function when the text before it since the last ';', '{'
or '}' has a '(' and ends the way a function head ends (')', a qualifier,
a trailing return type), not as an initializer ('=', ',') does; a brace
right after a member name in a constructor's initializer list is that
member's initializer. A file whose braces do not balance is reported as an
error, never skipped, so that the check cannot pass by losing track.

Usage: function_lengths.py [--over N] FILE...
Prints "LINES FILE:LINE NAME" per function (only those over N when given),
longest first; exits 2 on a file it cannot scan.
"""
import re
import signal
import sys

IDENT = re.compile(r'[A-Za-z_][A-Za-z_0-9]*')
RAW_PREFIX = re.compile(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(')


def tokens(text):
    """Yields (token, line) for the code of `text`: identifiers/numbers,
    and single punctuation characters; literals come out as '""'."""
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in ' \t\r\f\v':
            i += 1
            continue
        if c == '#' and at_line_start:
            # Preprocessor directive, with its backslash continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    line += 1
                    i += 1
                i += 1
            continue
        at_line_start = False
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
            continue
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            line += text.count('\n', i, end)
            i = end
            continue
        raw = RAW_PREFIX.match(text, i)
        if raw:
            close = ')' + raw.group(1) + '"'
            end = text.find(close, raw.end())
            end = n if end < 0 else end + len(close)
            yield '""', line
            line += text.count('\n', i, end)
            i = end
            continue
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            yield '""', line
            i = j + 1
            continue
        if c.isdigit():
            # Numbers, with C++14 digit separators (1'000).
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_.'"):
                j += 1
            yield text[i:j], line
            i = j
            continue
        m = IDENT.match(text, i)
        if m:
            yield m.group(0), line
            i = m.end()
            continue
        yield c, line
        i += 1


QUALIFIERS = {'const', 'noexcept', 'override', 'final', 'mutable', 'volatile', '&'}
# Words whose parenthesized group is not a parameter list.
GROUPED_WORDS = {'__attribute__', 'alignas', 'decltype', 'noexcept', 'throw',
                 '__declspec'}


def past_group(words, i, opening, closing):
    """The index just past the group that opens at words[i] (an `opening`
    word) and ends at its balancing `closing` word, or len(words)."""
    depth = 0
    while i < len(words):
        depth += {opening: 1, closing: -1}.get(words[i], 0)
        i += 1
        if depth == 0:
            break
    return i


def without_groups(words):
    """`words` without template<...> prefixes, [[attributes]] and the
    parenthesized groups of GROUPED_WORDS."""
    out, i = [], 0
    while i < len(words):
        w = words[i]
        if w == 'template' and i + 1 < len(words) and words[i + 1] == '<':
            i = past_group(words, i + 1, '<', '>')
            continue
        if w == '[' and i + 1 < len(words) and words[i + 1] == '[':
            while i < len(words) and not (words[i] == ']' and words[i - 1] == ']'):
                i += 1
            i += 1
            continue
        if w in GROUPED_WORDS and i + 1 < len(words) and words[i + 1] == '(':
            i = past_group(words, i + 1, '(', ')')
            if w in ('noexcept', 'throw'):
                out.append(w)
            continue
        out.append(w)
        i += 1
    return out


def classify(head):
    """The kind of scope a '{' after `head` (a list of tokens) opens outside
    any function: 'namespace', 'class', 'function', 'inline' (a brace in a
    constructor's initializer list or inside parentheses, part of the head)
    or 'other' (an initializer)."""
    raw = [t for t, _ in head]
    if 'namespace' in raw or (raw and raw[0] == 'extern' and raw[-1] == '""'):
        return 'namespace'
    words = without_groups(raw)
    if not words:
        return 'other'
    # "class Name", "enum class Name", then a base, template arguments or
    # nothing ("struct ev_loop* loop() {" is a function).
    k = 2 if words[:2] in (['enum', 'class'], ['enum', 'struct']) else 1
    if words[0] in ('class', 'struct', 'union', 'enum') and (
            len(words) <= k + 1 or words[k + 1] in ('<', ':', 'final')):
        return 'class'
    if '(' not in words:
        return 'other'
    if words.count('(') != words.count(')'):
        return 'inline'  # a brace inside parentheses: "f(int x = {});"
    first = words.index('(')
    if words[first - 1:first + 2] == ['operator', '(', ')']:
        first = words.index('(', first + 2)  # operator()'s parameters
    before = words[:first]
    if '=' in before and 'operator' not in before:
        return 'other'  # a variable's initializer: "T x = f(y{".
    depth, close = 0, first
    for k in range(first, len(words)):
        depth += {'(': 1, ')': -1}.get(words[k], 0)
        if depth == 0:
            close = k
            break
    tail = words[close + 1:]
    while tail and tail[0] in QUALIFIERS:
        tail = tail[1:]
    if tail[:1] == [':'] and tail[1:2] != [':']:
        # "Foo() : a_(x), b_{": b_'s brace; "... b_{y} {": the body.
        return 'inline' if IDENT.fullmatch(words[-1]) or words[-1] == '>' \
            else 'function'
    if all(w in QUALIFIERS for w in tail) or tail[:2] == ['-', '>']:
        return 'function'
    return 'other'


def function_name(head):
    """The (qualified) name in a function head: the words before its first
    '(' joined while they are linked by '::' or '~'."""
    words = without_groups([t for t, _ in head])
    if 'operator' in words:
        k = words.index('operator')
        end = words.index('(', k + 2) if words[k + 1] == '(' else words.index('(', k + 1)
        return ''.join(words[k - 3 if k >= 3 and words[k - 1] == ':' else k:end])
    k = words.index('(')
    j = k - 1
    while j >= 1 and (words[j - 1] == '~' or
                      (j >= 3 and words[j - 1] == ':' and words[j - 2] == ':')):
        j -= 1 if words[j - 1] == '~' else 3
    return ''.join(words[j:k])


def functions(path):
    """Yields (first_line, last_line, name) for each function of `path`;
    raises ValueError when the braces do not balance."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    scopes = ['namespace']    # kinds of the open braces outside functions
    head = []                 # tokens since the last ';', '{' or '}' there
    current = None            # (name, first line) of the open function
    depth = 0                 # braces open inside that function
    for tok, line in tokens(text):
        if current is not None:
            if tok == '{':
                depth += 1
            elif tok == '}':
                depth -= 1
                if depth == 0:
                    yield current[1], line, current[0]
                    current = None
            continue
        if scopes[-1] == 'inline':
            # A brace in a head ("a_{x}", "f([] { g(); })"): part of it.
            head.append((tok, line))
            if tok == '{':
                scopes.append('inline')
            elif tok == '}':
                scopes.pop()
            continue
        if scopes[-1] == 'other':
            # An initializer outside functions: only its braces matter.
            if tok == '{':
                scopes.append('other')
            elif tok == '}':
                scopes.pop()
            continue
        if tok == '{':
            kind = classify(head)
            if kind == 'function':
                current = (function_name(head), head[0][1])
                depth = 1
                head = []
            elif kind == 'inline':
                head.append((tok, line))
                scopes.append('inline')
            else:
                scopes.append(kind)
                if kind != 'other':
                    head = []
        elif tok == '}':
            if len(scopes) == 1:
                raise ValueError(f'{path}:{line}: unbalanced }}')
            scopes.pop()
            head = []
        elif tok == ';':
            head = []
        elif tok == ':' and len(head) == 1 and head[0][0] in (
                'public', 'private', 'protected'):
            head = []
        else:
            head.append((tok, line))
    if current is not None or len(scopes) != 1:
        raise ValueError(f'{path}: braces do not balance at the end')


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    over = None
    if len(argv) > 2 and argv[1] == '--over':
        over = int(argv[2])
        argv = argv[2:]
    rows = []
    status = 0
    for path in argv[1:]:
        try:
            for first, last, name in functions(path):
                rows.append((last - first + 1, path, first, name))
        except ValueError as e:
            print(f'cannot scan: {e}', file=sys.stderr)
            status = 2
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for length, path, first, name in rows:
        if over is None or length > over:
            print(f'{length} {path}:{first} {name}')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
