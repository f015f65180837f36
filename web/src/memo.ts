import { Component, type FunctionComponent, h } from 'preact';

/**
 * A component that renders again only when one of its props changed (compared with ===), as
 * React's `memo`. Written here rather than imported from preact/compat, which would also
 * install React's event and prop rewriting for the whole page.
 */
export function memo<P extends object>(render: FunctionComponent<P>): FunctionComponent<P> {
  class Memo extends Component<P> {
    override shouldComponentUpdate(next: P): boolean {
      const before = this.props as Record<string, unknown>;
      const after = next as Record<string, unknown>;
      for (const name in after) if (before[name] !== after[name]) return true;
      for (const name in before) if (!(name in after)) return true;
      return false;
    }
    override render(props: P) {
      return h(render, props);
    }
  }
  return Memo as unknown as FunctionComponent<P>;
}
