#include "apps/inspect/display_filter.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <vector>

namespace roce::inspect {

enum class Op : std::uint8_t { Present, Eq, Ne, Lt, Le, Gt, Ge, In, And, Or, Not };

// A literal as the field it is compared with needs it.
struct Literal {
  std::uint64_t u = 0;
  double d = 0;
  std::string s;
  IpView ip;
  unsigned prefix = 0;  // Ip: bits that must match
};

struct DisplayFilter::Node {
  Op op = Op::Present;
  const FieldDef* field = nullptr;
  bool either_address = false;  // ip.addr: ip.src or ip.dst
  std::vector<Literal> values;  // one, or several for `in`
  std::shared_ptr<const Node> a, b;
};

namespace {

using Node = DisplayFilter::Node;

struct Token {
  enum class Kind : std::uint8_t { Word, Text, Symbol, End } kind = Kind::End;
  std::string s;
  std::size_t col = 0;
};

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}

Result<std::vector<Token>> tokenize(const std::string& t) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token tok;
    tok.col = i + 1;
    if (c == '"') {
      const std::size_t end = t.find('"', i + 1);
      if (end == std::string::npos) return make_error(EINVAL, "column " + std::to_string(i + 1) + ": unterminated \"text\"");
      tok.kind = Token::Kind::Text;
      tok.s = t.substr(i + 1, end - i - 1);
      i = end + 1;
    } else if (word_char(c)) {
      tok.kind = Token::Kind::Word;
      while (i < t.size() && word_char(t[i])) tok.s += t[i++];
    } else {
      static const char* kSymbols[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "{", "}", ","};
      for (const char* s : kSymbols)
        if (t.compare(i, std::strlen(s), s) == 0) {
          tok.s = s;
          break;
        }
      if (tok.s.empty()) return make_error(EINVAL, "column " + std::to_string(i + 1) + ": unexpected '" + std::string(1, c) + "'");
      tok.kind = Token::Kind::Symbol;
      i += tok.s.size();
    }
    out.push_back(std::move(tok));
  }
  Token end;
  end.col = t.size() + 1;
  out.push_back(end);
  return out;
}

std::optional<IpView> parse_ip(const std::string& s) {
  IpView v;
  if (inet_pton(AF_INET, s.c_str(), v.bytes.data()) == 1) {
    v.version = proto::IpVersion::V4;
    return v;
  }
  if (inet_pton(AF_INET6, s.c_str(), v.bytes.data()) == 1) {
    v.version = proto::IpVersion::V6;
    return v;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_number(const std::string& s) {
  std::uint64_t v = 0;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* b = s.data() + (hex ? 2 : 0);
  const auto r = std::from_chars(b, s.data() + s.size(), v, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}

  Result<std::shared_ptr<const Node>> parse() {
    auto n = expr();
    if (!n) return n;
    if (peek().kind != Token::Kind::End) return fail(peek(), "unexpected '" + peek().s + "'");
    return n;
  }

 private:
  const Token& peek() const { return t_[pos_]; }
  const Token& next() { return t_[pos_ < t_.size() - 1 ? pos_++ : pos_]; }
  bool accept(std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (peek().kind != Token::Kind::End && peek().kind != Token::Kind::Text && peek().s == w) {
        ++pos_;
        return true;
      }
    return false;
  }
  static Error fail(const Token& at, const std::string& why) {
    return make_error(EINVAL, "column " + std::to_string(at.col) + ": " + why);
  }

  Result<std::shared_ptr<const Node>> expr() {
    auto left = term();
    if (!left) return left;
    while (accept({"or", "||"})) {
      auto right = term();
      if (!right) return right;
      auto n = std::make_shared<Node>();
      n->op = Op::Or;
      n->a = *left;
      n->b = *right;
      left = std::shared_ptr<const Node>(n);
    }
    return left;
  }

  Result<std::shared_ptr<const Node>> term() {
    auto left = factor();
    if (!left) return left;
    while (accept({"and", "&&"})) {
      auto right = factor();
      if (!right) return right;
      auto n = std::make_shared<Node>();
      n->op = Op::And;
      n->a = *left;
      n->b = *right;
      left = std::shared_ptr<const Node>(n);
    }
    return left;
  }

  Result<std::shared_ptr<const Node>> factor() {
    if (accept({"not", "!"})) {
      auto inner = factor();
      if (!inner) return inner;
      auto n = std::make_shared<Node>();
      n->op = Op::Not;
      n->a = *inner;
      return std::shared_ptr<const Node>(n);
    }
    if (accept({"("})) {
      auto inner = expr();
      if (!inner) return inner;
      if (!accept({")"})) return fail(peek(), "expected ')'");
      return inner;
    }
    return test();
  }

  Result<std::shared_ptr<const Node>> test() {
    const Token& name = next();
    if (name.kind != Token::Kind::Word) return fail(name, name.kind == Token::Kind::End ? "expected a field name" : "expected a field name, got '" + name.s + "'");
    auto n = std::make_shared<Node>();
    if (name.s == "ip.addr") {
      n->either_address = true;
      n->field = find_field("ip.src");
    } else {
      n->field = find_field(name.s);
    }
    if (!n->field) {
      const std::string near = suggest_fields(name.s);
      return fail(name, "unknown field '" + name.s + "'" + (near.empty() ? " (roce-inspect --help lists the fields)" : " (did you mean: " + near + ")"));
    }
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::Eq}, {"eq", Op::Eq}, {"!=", Op::Ne}, {"ne", Op::Ne},
                                                      {"<", Op::Lt},  {"lt", Op::Lt}, {"<=", Op::Le}, {"le", Op::Le},
                                                      {">", Op::Gt},  {"gt", Op::Gt}, {">=", Op::Ge}, {"ge", Op::Ge},
                                                      {"in", Op::In}};
    n->op = Op::Present;
    for (const auto& [s, op] : kOps)
      if (peek().kind != Token::Kind::Text && peek().s == s) {
        n->op = op;
        ++pos_;
        break;
      }
    if (n->op == Op::Present) return std::shared_ptr<const Node>(n);
    const bool ordered = n->op == Op::Lt || n->op == Op::Le || n->op == Op::Gt || n->op == Op::Ge;
    const FieldType type = n->field->type;
    if (ordered && (type == FieldType::Text || type == FieldType::Ip || type == FieldType::Bool || type == FieldType::Flag))
      return fail(name, "'" + name.s + "' is " + to_string(type) + ": compare it with == or !=");
    if (n->op == Op::In) {
      if (!accept({"{"})) return fail(peek(), "expected '{' after 'in'");
      while (!accept({"}"})) {
        accept({","});
        if (peek().kind == Token::Kind::End) return fail(peek(), "expected '}'");
        auto v = literal(*n->field, next());
        if (!v) return v.error();
        n->values.push_back(std::move(*v));
      }
      if (n->values.empty()) return fail(name, "'in {}' needs at least one value");
    } else {
      auto v = literal(*n->field, next());
      if (!v) return v.error();
      n->values.push_back(std::move(*v));
    }
    return std::shared_ptr<const Node>(n);
  }

  static Result<Literal> literal(const FieldDef& f, const Token& tok) {
    if (tok.kind == Token::Kind::End) return fail(tok, "expected a value after the operator");
    if (tok.kind == Token::Kind::Symbol) return fail(tok, "expected a value, got '" + tok.s + "'");
    Literal l;
    switch (f.type) {
      case FieldType::Text: l.s = tok.s; return l;
      case FieldType::Ip: {
        const std::size_t slash = tok.s.find('/');
        const auto ip = parse_ip(tok.s.substr(0, slash));
        if (!ip) return fail(tok, "'" + tok.s + "' is not an IP address or prefix");
        l.ip = *ip;
        const unsigned bits = ip->version == proto::IpVersion::V4 ? 32 : 128;
        l.prefix = bits;
        if (slash != std::string::npos) {
          const auto p = parse_number(tok.s.substr(slash + 1));
          if (!p || *p > bits) return fail(tok, "'" + tok.s + "': the prefix length must be 0.." + std::to_string(bits));
          l.prefix = static_cast<unsigned>(*p);
        }
        return l;
      }
      case FieldType::Real: {
        char* end = nullptr;
        l.d = std::strtod(tok.s.c_str(), &end);
        if (tok.kind == Token::Kind::Text || end != tok.s.c_str() + tok.s.size()) return fail(tok, "'" + tok.s + "' is not a number of seconds");
        return l;
      }
      case FieldType::Bool:
      case FieldType::Flag:
        if (tok.s == "1" || tok.s == "true" || tok.s == "yes") l.u = 1;
        else if (tok.s == "0" || tok.s == "false" || tok.s == "no") l.u = 0;
        else return fail(tok, "'" + std::string(f.name) + "' is yes/no: compare it with 1/0 or true/false");
        return l;
      case FieldType::Uint:
      case FieldType::Hex64: break;
    }
    if (const auto n = parse_number(tok.s)) {
      l.u = *n;
      return l;
    }
    if (std::string_view(f.name) == "opcode") {
      if (const auto op = opcode_from_name(tok.s)) {
        l.u = *op;
        return l;
      }
      return fail(tok, "'" + tok.s + "' is neither a number nor an opcode name (e.g. RC_SEND_ONLY)");
    }
    return fail(tok, "'" + tok.s + "' is not a number (decimal or 0x hex)");
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
};

bool ip_match(const IpView& have, const Literal& want) {
  if (have.version != want.ip.version) return false;
  const unsigned full = want.prefix / 8, rest = want.prefix % 8;
  if (std::memcmp(have.bytes.data(), want.ip.bytes.data(), full) != 0) return false;
  if (!rest) return true;
  const std::uint8_t mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
  return (have.bytes[full] & mask) == (want.ip.bytes[full] & mask);
}

// -1, 0, 1 as `v` is below, equal to or above `l`; equality only for text and addresses.
int compare(const FieldDef& f, const Value& v, const Literal& l) {
  switch (v.kind) {
    case Value::Kind::Number: return v.u < l.u ? -1 : v.u > l.u ? 1 : 0;
    case Value::Kind::Real: return v.d < l.d ? -1 : v.d > l.d ? 1 : 0;
    case Value::Kind::Text: return v.s == l.s ? 0 : 1;
    case Value::Kind::Ip: return ip_match(v.ip, l) ? 0 : 1;
    case Value::Kind::Absent: break;
  }
  (void)f;
  return 1;
}

bool test_value(const Node& n, const Value& v) {
  if (!v.present()) return false;
  if (n.op == Op::Present) return v.kind != Value::Kind::Number || (n.field->type != FieldType::Bool) || v.u != 0;
  if (n.op == Op::In) {
    for (const Literal& l : n.values)
      if (compare(*n.field, v, l) == 0) return true;
    return false;
  }
  const int c = compare(*n.field, v, n.values.front());
  switch (n.op) {
    case Op::Eq: return c == 0;
    case Op::Ne: return c != 0;
    case Op::Lt: return c < 0;
    case Op::Le: return c <= 0;
    case Op::Gt: return c > 0;
    case Op::Ge: return c >= 0;
    default: return false;
  }
}

bool eval(const Node& n, const FrameView& f, const FieldContext& c) {
  switch (n.op) {
    case Op::And: return eval(*n.a, f, c) && eval(*n.b, f, c);
    case Op::Or: return eval(*n.a, f, c) || eval(*n.b, f, c);
    case Op::Not: return !eval(*n.a, f, c);
    default: break;
  }
  if (!n.either_address) return test_value(n, n.field->get(f, c));
  // ip.addr != X holds when neither address is X.
  if (n.op == Op::Ne) {
    Node eq = n;
    eq.op = Op::Eq;
    return f.has_ip && !test_value(eq, Value::address(f.ip_src)) && !test_value(eq, Value::address(f.ip_dst));
  }
  return f.has_ip && (test_value(n, Value::address(f.ip_src)) || test_value(n, Value::address(f.ip_dst)));
}

}  // namespace

Result<DisplayFilter> DisplayFilter::compile(const std::string& text) {
  auto tokens = tokenize(text);
  if (!tokens) return tokens.error();
  Parser p(std::move(*tokens));
  auto root = p.parse();
  if (!root) return root.error();
  DisplayFilter f;
  f.text_ = text;
  f.root_ = *root;
  return f;
}

bool DisplayFilter::matches(const FrameView& f, const FieldContext& c) const { return !root_ || eval(*root_, f, c); }

}  // namespace roce::inspect
