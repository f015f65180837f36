import { render } from 'preact';
import { App } from './app.tsx';
import { lang } from './i18n.ts';
import { ModelStatusBanner } from './model-status.tsx';
import './styles.css';

document.documentElement.lang = lang;
const root = document.getElementById('app');
if (root) {
  render(
    <>
      <ModelStatusBanner />
      <App />
    </>,
    root,
  );
}
